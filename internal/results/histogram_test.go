package results

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewHistogram(t *testing.T) {
	h := NewHistogram()
	assert.Equal(t, int64(1), h.LowestTrackableValue())
	assert.Equal(t, int64(time.Hour), h.HighestTrackableValue())
	assert.Equal(t, int64(3), h.SignificantFigures())
	assert.Less(t, h.ByteSize(), 300_000, "a few hundred KB at most")
	require.NoError(t, h.RecordValue(1))
	require.NoError(t, h.RecordValue(int64(time.Hour)))
	assert.Error(t, h.RecordValue(int64(time.Hour)*2))
}

func TestEncodeDecodeHistogram(t *testing.T) {
	h := NewHistogram()
	for i := int64(1); i <= 10000; i++ {
		require.NoError(t, h.RecordValue(i*1000)) // 1 µs .. 10 ms
	}
	e, err := EncodeHistogram(h)
	require.NoError(t, err)
	assert.Equal(t, int64(10000), e.Count)
	assert.Equal(t, int64(1000), e.Min)
	assert.InDelta(t, 10_000_000, e.Max, 10_000_000*0.001)
	assert.InDelta(t, 5_000_500, e.Mean, 5_000_500*0.001)
	assert.InDelta(t, 5_000_000, e.P50, 5_000_000*0.001)
	assert.InDelta(t, 9_000_000, e.P90, 9_000_000*0.001)
	assert.InDelta(t, 9_900_000, e.P99, 9_900_000*0.001)
	assert.InDelta(t, 9_990_000, e.P999, 9_990_000*0.001)
	assert.Less(t, len(e.HDR), 20_000, "the encoding is compact")

	d, err := e.Decode()
	require.NoError(t, err)
	assert.True(t, d.Equals(h))

	empty, err := EncodeHistogram(NewHistogram())
	require.NoError(t, err)
	assert.Equal(t, Histogram{HDR: empty.HDR}, *empty)
	nilEnc, err := EncodeHistogram(nil)
	assert.NoError(t, err)
	assert.Nil(t, nilEnc)

	d, err = (&Histogram{}).Decode()
	require.NoError(t, err)
	assert.Zero(t, d.TotalCount())
	_, err = (&Histogram{Count: 3}).Decode()
	assert.Error(t, err)
	_, err = (*Histogram)(nil).Decode()
	assert.Error(t, err)
	_, err = (&Histogram{HDR: "!!!", Count: 1}).Decode()
	assert.Error(t, err)
}

func TestMergeHistograms(t *testing.T) {
	var parts []*Histogram
	all := NewHistogram()
	for p := int64(1); p <= 3; p++ {
		h := NewHistogram()
		for i := int64(0); i < 1000*p; i++ {
			v := (i + 1) * p * 997
			require.NoError(t, h.RecordValue(v))
			require.NoError(t, all.RecordValue(v))
		}
		e, err := EncodeHistogram(h)
		require.NoError(t, err)
		parts = append(parts, e, nil)
	}
	m, err := MergeHistograms(parts...)
	require.NoError(t, err)
	want, err := EncodeHistogram(all)
	require.NoError(t, err)
	assert.Equal(t, int64(6000), m.Count)
	assert.Equal(t, parts[0].Count+parts[2].Count+parts[4].Count, m.Count)
	assert.Equal(t, want, m)

	none, err := MergeHistograms()
	assert.NoError(t, err)
	assert.Nil(t, none)
	none, err = MergeHistograms(nil, nil)
	assert.NoError(t, err)
	assert.Nil(t, none)

	_, err = MergeHistograms(parts[0], &Histogram{HDR: "garbage", Count: 1})
	assert.Error(t, err)
}

func TestMergeHistogramsOtherGeometry(t *testing.T) {
	// A histogram from another writer, wider and coarser: nothing is dropped.
	other := hdrhistogram.New(1000, int64(24*time.Hour), 2)
	require.NoError(t, other.RecordValue(int64(10*time.Hour)))
	oe, err := EncodeHistogram(other)
	require.NoError(t, err)
	h := NewHistogram()
	require.NoError(t, h.RecordValue(5))
	he, err := EncodeHistogram(h)
	require.NoError(t, err)
	m, err := MergeHistograms(he, oe)
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Count)
	assert.Equal(t, int64(5), m.Min)
	assert.InDelta(t, float64(10*time.Hour), float64(m.Max), float64(10*time.Hour)*0.01) // the coarser precision
}

// craftHDR builds a V2 compressed encoding with the given header geometry
// and no counts.
func craftHDR(digits int32, lowest, highest int64) string {
	var inner bytes.Buffer
	_ = binary.Write(&inner, binary.BigEndian, int32(0x1c849303|0x10)) // cookie
	_ = binary.Write(&inner, binary.BigEndian, int32(0))               // payload length
	_ = binary.Write(&inner, binary.BigEndian, int32(0))               // normalizing offset
	_ = binary.Write(&inner, binary.BigEndian, digits)
	_ = binary.Write(&inner, binary.BigEndian, lowest)
	_ = binary.Write(&inner, binary.BigEndian, highest)
	_ = binary.Write(&inner, binary.BigEndian, float64(1))
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(inner.Bytes())
	_ = w.Close()
	var out bytes.Buffer
	_ = binary.Write(&out, binary.BigEndian, int32(0x1c849304|0x10))
	_ = binary.Write(&out, binary.BigEndian, int32(z.Len()))
	out.Write(z.Bytes())
	return base64.StdEncoding.EncodeToString(out.Bytes())
}

func TestDecodeRefusesHugeGeometry(t *testing.T) {
	ok := &Histogram{HDR: craftHDR(3, 1, int64(time.Hour))}
	d, err := ok.Decode()
	require.NoError(t, err, "the crafted encoding is valid")
	assert.Zero(t, d.TotalCount())

	huge := &Histogram{HDR: craftHDR(5, 1, math.MaxInt64)}
	_, err = huge.Decode()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "limit")
}

func TestCountsLenMatchesLibrary(t *testing.T) {
	for _, g := range []struct {
		lo, hi int64
		digits int
	}{
		{1, int64(time.Hour), 3}, {1, int64(time.Hour), 2}, {1000, int64(24 * time.Hour), 2},
		{1, 2, 1}, {7, 1 << 40, 4}, {1, math.MaxInt64, 1},
	} {
		h := hdrhistogram.New(g.lo, g.hi, g.digits)
		// ByteSize is 68 bytes of header plus 8 bytes per count.
		assert.Equal(t, int64(h.ByteSize()-68)/8, countsLen(g.lo, g.hi, g.digits), "%+v", g)
	}
}
