package report

import (
	"errors"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
)

// quantiles are the percentiles of a merged histogram, in nanoseconds.
type quantiles struct {
	name                string
	count               int64
	p50, p99, p999, max int64
}

// percentiles merges the named histogram (the first of names that the
// documents carry) over docs, skipping failed runs when passedOnly. When
// the histograms cannot be merged it falls back on the medians of the
// runs' summaries, with a warning.
func (b *builder) percentiles(docs []*results.Document, passedOnly bool, names []string) (quantiles, bool) {
	for _, name := range names {
		if q, ok := b.mergedHistogram(docs, passedOnly, name, func(d *results.Document) *results.Histogram {
			return d.Latency[name]
		}); ok {
			return q, true
		}
	}
	return quantiles{}, false
}

// mergedHistogram merges the histogram get finds in each of docs (see
// percentiles); name labels the result.
func (b *builder) mergedHistogram(docs []*results.Document, passedOnly bool, name string,
	get func(*results.Document) *results.Histogram) (quantiles, bool) {
	var hs []*results.Histogram
	for _, d := range docs {
		if passedOnly && !d.Passed {
			continue
		}
		if h := get(d); h != nil && h.Count > 0 {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return quantiles{}, false
	}
	// The same runs' histograms come back for several tables: merge once.
	key := name
	for _, h := range hs {
		key += fmt.Sprintf(",%p", h)
	}
	if q, ok := b.merged[key]; ok {
		return q, true
	}
	q, ok := b.mergeQuantiles(hs, name)
	if ok {
		if b.merged == nil {
			b.merged = make(map[string]quantiles)
		}
		b.merged[key] = q
	}
	return q, ok
}

// mergeQuantiles is the quantiles of hs merged, or the medians of their
// summaries when they cannot be merged.
func (b *builder) mergeQuantiles(hs []*results.Histogram, name string) (quantiles, bool) {
	m, err := b.mergeDecode(hs)
	if err == nil && m.TotalCount() > 0 {
		return quantiles{name: name, count: m.TotalCount(), p50: m.ValueAtQuantile(50),
			p99: m.ValueAtQuantile(99), p999: m.ValueAtQuantile(99.9), max: m.Max()}, true
	}
	if err != nil {
		b.rep.Warnings = appendNew(b.rep.Warnings, "latency: "+err.Error()+"; using the medians of the runs' summaries")
	}
	q := quantiles{name: name}
	var p50, p99, p999 []float64
	for _, h := range hs {
		q.count += h.Count
		q.max = max(q.max, h.Max)
		p50, p99, p999 = append(p50, float64(h.P50)), append(p99, float64(h.P99)), append(p999, float64(h.P999))
	}
	q.p50, q.p99, q.p999 = int64(median(p50)), int64(median(p99)), int64(median(p999))
	return q, true
}

// times are the quantiles as Times.
func (q quantiles) times() *Times {
	return &Times{Count: q.count, P50: q.p50, P99: q.p99, P999: q.p999, Max: q.max}
}

type hdrQuantiles interface {
	TotalCount() int64
	ValueAtQuantile(q float64) int64
	Max() int64
}

// mergeDecode merges the histograms into one decoded histogram
// (results.MergeDecoded): a report needs the quantiles, not an encoding.
// Each histogram is decoded once per report: a run's histograms take part
// in several tables, and decoding was most of a report's time.
func (b *builder) mergeDecode(hs []*results.Histogram) (hdrQuantiles, error) {
	m, err := results.MergeDecodedWith(b.decode, hs...)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("no histogram")
	}
	return m, nil
}

// describe is a phrase for a failure kind, for footnotes; "broken" and
// "interrupted" are the report's own kinds for runs without a failure.
func describe(kind string) string {
	switch kind {
	case kindBroken:
		return "broke"
	case kindInterrupted:
		return "interrupted"
	case kindShort:
		return "ran under 1 second"
	case kindNoScore:
		return "no score"
	}
	return results.Describe(kind)
}

const (
	kindBroken      = "broken"
	kindInterrupted = "interrupted"
	// kindShort: a passed run whose timed phase lasted under one second,
	// which Mark does not score; kindNoScore: a passed run of one second
	// or more whose document has no score all the same.
	kindShort   = "short"
	kindNoScore = "no_score"
	// kindReordered: a row's reordering (not a failure); kindWarning: a
	// warning a run recorded (results.Document.Warnings).
	kindReordered = "reordered_note"
	kindWarning   = "warning"
)

// decode is Histogram.Decode, remembered for the report.
func (b *builder) decode(h *results.Histogram) (*hdrhistogram.Histogram, error) {
	if d, ok := b.decoded[h]; ok {
		return d, nil
	}
	d, err := h.Decode()
	if err != nil {
		return nil, err
	}
	if b.decoded == nil {
		b.decoded = make(map[*results.Histogram]*hdrhistogram.Histogram)
	}
	b.decoded[h] = d
	return d, nil
}
