// Package metrics reads Prometheus metrics, through the Prometheus
// project's own parser (prometheus/common/expfmt), enough for `volanogo
// load` to read a server's CPU and memory (process_cpu_seconds_total,
// process_resident_memory_bytes) and its connections, goroutines and
// descriptors at the start and the end of a timed phase.
//
// Series are keyed by their parsed labels, not by the text of the page:
// `x{a="1",b="2"}`, `x{b="2",a="1"}` and `x{a="1",b="2",}` are one series.
package metrics

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series is one time series of a page: its labels (the metric name not
// among them) and its value.
type Series struct {
	Labels map[string]string
	Value  float64
}

// Samples maps a metric name to its series. A summary or histogram named
// x gives the series x (one per quantile label), x_sum and x_count, or
// x_bucket (one per le label), x_sum and x_count, as Prometheus stores them.
type Samples map[string][]Series

// Get returns the value of the series of name whose labels are exactly
// the pairs given (name, value, name, value, ...), in any order: Get(name)
// is the unlabelled series.
func (s Samples) Get(name string, labelPairs ...string) (float64, bool) {
	want, ok := pairs(labelPairs)
	if !ok {
		return 0, false
	}
	for _, x := range s[name] {
		if maps.Equal(x.Labels, want) {
			return x.Value, true
		}
	}
	return 0, false
}

// Sum adds the series of name whose labels include the pairs given (all
// of name's series when none are given), and says whether there was one.
func (s Samples) Sum(name string, labelPairs ...string) (float64, bool) {
	want, ok := pairs(labelPairs)
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
	for _, x := range s[name] {
		if includes(x.Labels, want) {
			sum += x.Value
			found = true
		}
	}
	return sum, found
}

// pairs makes a label set of name, value, ...; false for an odd count.
func pairs(kv []string) (map[string]string, bool) {
	if len(kv)%2 != 0 {
		return nil, false
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m, true
}

func includes(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// MaxBytes bounds a scraped page.
const MaxBytes = 8 << 20

// errTooLarge: a page past MaxBytes.
var errTooLarge = fmt.Errorf("page larger than %d bytes", MaxBytes)

// Parse reads the Prometheus text exposition format (version 0.0.4,
// UTF-8 metric and label names allowed). A page that cannot be read is an
// error naming the line.
func Parse(r io.Reader) (Samples, error) {
	return decode(r, expfmt.NewFormat(expfmt.TypeTextPlain))
}

// decode reads a page in the given format (the text format, or the
// delimited protocol buffers a server may answer with) into Samples.
func decode(r io.Reader, format expfmt.Format) (Samples, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("metrics: %w", errTooLarge)
	}
	var fams []*dto.MetricFamily
	if format.FormatType() == expfmt.TypeTextPlain {
		// Parsed here rather than by expfmt.NewDecoder so that
		// UTF-8 names are accepted whatever the format's escaping.
		p := expfmt.NewTextParser(model.UTF8Validation)
		byName, err := p.TextToMetricFamilies(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		for _, f := range byName {
			fams = append(fams, f)
		}
	} else {
		dec := expfmt.NewDecoder(bytes.NewReader(data), format)
		for {
			f := new(dto.MetricFamily)
			err := dec.Decode(f)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("metrics: %w", err)
			}
			fams = append(fams, f)
		}
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, fams...)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	out := Samples{}
	for _, smp := range vec {
		name := string(smp.Metric[model.MetricNameLabel])
		labels := make(map[string]string, len(smp.Metric)-1)
		for k, v := range smp.Metric {
			if k != model.MetricNameLabel {
				labels[string(k)] = string(v)
			}
		}
		out[name] = append(out[name], Series{Labels: labels, Value: float64(smp.Value)})
	}
	return out, nil
}

// accept asks for the text format, or delimited protocol buffers.
const accept = `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3`

// Scrape fetches url and parses it, in the format the server answers
// with (the text format when it does not say). A nil client uses one with
// a 5-second timeout.
func Scrape(ctx context.Context, client *http.Client, url string) (Samples, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() != expfmt.TypeProtoDelim {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	s, err := decode(resp.Body, format)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return s, nil
}

// Bucket is one bucket of a histogram: its upper bound and the count of
// values at or below it.
type Bucket struct {
	UpperBound float64
	Cumulative float64
}

// Histogram returns the buckets of the histogram name (its name_bucket
// series) in ascending order, +Inf last, and its count (name_count, else
// the +Inf bucket's); false when the page has no such histogram.
func (s Samples) Histogram(name string) (buckets []Bucket, count float64, ok bool) {
	for _, x := range s[name+"_bucket"] {
		le, err := strconv.ParseFloat(x.Labels["le"], 64)
		if err != nil || len(x.Labels) != 1 {
			continue
		}
		buckets = append(buckets, Bucket{UpperBound: le, Cumulative: x.Value})
	}
	if len(buckets) == 0 {
		return nil, 0, false
	}
	slices.SortFunc(buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
	count, ok = s.Get(name + "_count")
	if !ok {
		count = buckets[len(buckets)-1].Cumulative
	}
	return buckets, count, true
}

// HistogramDelta is what a histogram counted between two scrapes: the
// later's buckets less the earlier's (an absent bucket counts 0), and
// the count.
func HistogramDelta(before, after []Bucket, countBefore, countAfter float64) (delta []Bucket, count float64) {
	was := map[float64]float64{}
	for _, b := range before {
		was[b.UpperBound] = b.Cumulative
	}
	for _, b := range after {
		delta = append(delta, Bucket{UpperBound: b.UpperBound, Cumulative: max(0, b.Cumulative-was[b.UpperBound])})
	}
	return delta, max(0, countAfter-countBefore)
}

// Quantile is the upper bound of the bucket that holds quantile q (0 to 1)
// of count values: an upper bound of the true quantile, +Inf when it lies
// past the last finite bucket; false for no values.
func Quantile(buckets []Bucket, count, q float64) (float64, bool) {
	if count <= 0 {
		return 0, false
	}
	rank := q * count
	for _, b := range buckets {
		if b.Cumulative >= rank && b.Cumulative > 0 {
			return b.UpperBound, true
		}
	}
	return math.Inf(1), true
}

// Max is the upper bound of the highest bucket that holds a value (+Inf
// when values lie past the last finite bucket); false for no values.
func Max(buckets []Bucket, count float64) (float64, bool) {
	return Quantile(buckets, count, 1)
}
