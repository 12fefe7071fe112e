package results

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry of NewHistogram.
const (
	HistogramLowest  = 1                // ns
	HistogramHighest = int64(time.Hour) // ns
	HistogramDigits  = 3                // significant figures
	maxDecodedCounts = 1 << 21          // bounds a decoded histogram to 16 MiB
)

// NewHistogram returns an empty histogram for nanosecond values from 1 ns
// to 1 hour with 3 significant figures (about 270 KB in memory; its encoding
// is typically a few hundred bytes). Values above an hour are not recorded
// by RecordValue (it returns an error): clamp them first if they matter.
// The histogram is not safe for concurrent use.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistogramLowest, HistogramHighest, HistogramDigits)
}

// EncodeHistogram encodes h (HdrHistogram V2 compressed, base64) together
// with its summary. A nil h gives nil.
func EncodeHistogram(h *hdrhistogram.Histogram) (*Histogram, error) {
	if h == nil {
		return nil, nil
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	out := &Histogram{HDR: string(enc)}
	out.summarise(h)
	return out, nil
}

func (h *Histogram) summarise(src *hdrhistogram.Histogram) {
	h.Count = src.TotalCount()
	if h.Count == 0 {
		h.Min, h.Max, h.Mean, h.P50, h.P90, h.P99, h.P999 = 0, 0, 0, 0, 0, 0, 0
		return
	}
	h.Min = src.Min()
	h.Max = src.Max()
	h.Mean = src.Mean()
	h.P50 = src.ValueAtQuantile(50)
	h.P90 = src.ValueAtQuantile(90)
	h.P99 = src.ValueAtQuantile(99)
	h.P999 = src.ValueAtQuantile(99.9)
}

// Decode decodes the HDR encoding of h. An empty encoding (allowed only for
// an empty histogram) decodes to an empty NewHistogram. Decode refuses
// encodings whose geometry would need more than 16 MiB of counts.
func (h *Histogram) Decode() (*hdrhistogram.Histogram, error) {
	if h == nil {
		return nil, errors.New("nil histogram")
	}
	if h.HDR == "" {
		if h.Count != 0 {
			return nil, fmt.Errorf("no hdr encoding for %d values", h.Count)
		}
		return NewHistogram(), nil
	}
	if err := checkGeometry(h.HDR); err != nil {
		return nil, fmt.Errorf("hdr: %w", err)
	}
	hh, err := hdrhistogram.Decode([]byte(h.HDR))
	if err != nil {
		return nil, fmt.Errorf("hdr: %w", err)
	}
	return hh, nil
}

// checkGeometry reads the header of a V2 compressed encoding and refuses a
// geometry whose dense counts array would be too large, before
// hdrhistogram.Decode allocates it. Other defects are left to Decode.
func checkGeometry(enc string) error {
	full, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(full) < 8 {
		return nil // Decode reports it
	}
	body := full[8:]
	if l := int(int32(binary.BigEndian.Uint32(full[4:8]))); l >= 0 && l <= len(body) {
		body = body[:l]
	}
	z, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	defer z.Close()
	hdr := make([]byte, 40)
	if _, err := io.ReadFull(z, hdr); err != nil {
		return nil
	}
	digits := int32(binary.BigEndian.Uint32(hdr[12:16]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:24]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:32]))
	if digits < 0 || digits > 5 {
		return nil // Decode rejects it
	}
	if c := countsLen(lowest, highest, int(digits)); c > maxDecodedCounts {
		return fmt.Errorf("geometry %d..%d at %d digits needs %d counts (limit %d)", lowest, highest, digits, c, maxDecodedCounts)
	}
	return nil
}

// countsLen mirrors hdrhistogram's geometry: the length of the dense counts
// array of a histogram of that range and precision.
func countsLen(lowest, highest int64, digits int) int64 {
	if lowest < 1 {
		lowest = 1
	}
	unitMag := 63 - bits.LeadingZeros64(uint64(lowest)) // floor(log2)
	single := 2 * math.Pow10(digits)
	subMag := int(math.Ceil(math.Log2(single)))
	halfMag := max(subMag, 1) - 1
	if unitMag+halfMag > 61 {
		return 0 // Decode rejects it
	}
	subCount := int64(1) << (halfMag + 1)
	smallest := subCount << unitMag
	buckets := int64(1)
	for smallest <= highest {
		if smallest > math.MaxInt64/2 {
			buckets++
			break
		}
		smallest <<= 1
		buckets++
	}
	return (buckets + 1) * (subCount / 2)
}

// MergeHistograms merges encoded histograms; nil entries are skipped, and
// no histogram at all gives nil. The result has the widest range and the
// finest precision of its inputs, so that no value is dropped.
func MergeHistograms(hs ...*Histogram) (*Histogram, error) {
	out, err := MergeDecoded(hs...)
	if out == nil || err != nil {
		return nil, err
	}
	return EncodeHistogram(out)
}

// MergeDecoded merges histograms (nil ones are skipped) into one decoded
// histogram with the widest range and the finest precision of them, so
// that no value is dropped; nil when there is none. MergeHistograms is
// this, encoded.
func MergeDecoded(hs ...*Histogram) (*hdrhistogram.Histogram, error) {
	return MergeDecodedWith((*Histogram).Decode, hs...)
}

// sameGeometry merges histograms of one geometry (the usual case: every
// run of volanogo records with the same) by adding their counts, which is
// many times faster than Histogram.Merge's walk over the values; nil when
// the geometries differ.
func sameGeometry(hs []*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	first := hs[0]
	for _, h := range hs[1:] {
		if h.LowestTrackableValue() != first.LowestTrackableValue() ||
			h.HighestTrackableValue() != first.HighestTrackableValue() ||
			h.SignificantFigures() != first.SignificantFigures() {
			return nil
		}
	}
	sum := first.Export()
	for _, h := range hs[1:] {
		counts := h.Export().Counts
		if len(counts) != len(sum.Counts) {
			return nil
		}
		for i, c := range counts {
			sum.Counts[i] += c
		}
	}
	return hdrhistogram.Import(sum)
}

// MergeDecodedWith is MergeDecoded with decode in place of Decode, for a
// caller that keeps what it has decoded (a report merges each run's
// histogram into several tables). decode must not return a histogram
// that anyone modifies.
func MergeDecodedWith(decode func(*Histogram) (*hdrhistogram.Histogram, error), hs ...*Histogram) (*hdrhistogram.Histogram, error) {
	var decoded []*hdrhistogram.Histogram
	lo, hi, digits := int64(math.MaxInt64), int64(0), int64(0)
	for i, h := range hs {
		if h == nil {
			continue
		}
		d, err := decode(h)
		if err != nil {
			return nil, fmt.Errorf("merge histogram %d: %w", i, err)
		}
		decoded = append(decoded, d)
		lo = min(lo, d.LowestTrackableValue())
		hi = max(hi, d.HighestTrackableValue())
		digits = max(digits, d.SignificantFigures())
	}
	if len(decoded) == 0 {
		return nil, nil
	}
	if countsLen(lo, hi, int(digits)) > maxDecodedCounts {
		return nil, fmt.Errorf("merge histograms: combined geometry %d..%d at %d digits is too large", lo, hi, digits)
	}
	if same := sameGeometry(decoded); same != nil {
		return same, nil
	}
	out := hdrhistogram.New(lo, hi, int(digits))
	for i, d := range decoded {
		if dropped := out.Merge(d); dropped != 0 {
			return nil, fmt.Errorf("merge histogram %d: %d values dropped", i, dropped)
		}
	}
	return out, nil
}
