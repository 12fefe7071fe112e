package metrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.34
process_resident_memory_bytes 2.5e+07
# TYPE volanogo_connections_closed_total counter
volanogo_connections_closed_total{reason="eof"} 3
volanogo_connections_closed_total{reason="odd } \" label"} 4 1700000000000
# TYPE volanogo_connections_refused_total counter
volanogo_connections_refused_total{reason="open_files",listener="chat"} 5
volanogo_connections_refused_total{listener="ws" , reason="open_files",} 6
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} NaN
go_gc_duration_seconds_sum 0.25
go_gc_duration_seconds_count 7
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 1
latency_seconds_bucket{le="+Inf"} 2
latency_seconds_sum 0.3
latency_seconds_count 2
up +Inf

`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(page))
	require.NoError(t, err)
	v, ok := s.Get("process_cpu_seconds_total")
	assert.True(t, ok)
	assert.Equal(t, 12.34, v)
	v, _ = s.Get("process_resident_memory_bytes")
	assert.Equal(t, 25e6, v)
	sum, ok := s.Sum("volanogo_connections_closed_total")
	assert.True(t, ok)
	assert.Equal(t, 7.0, sum)
	_, ok = s.Get("volanogo_connections_closed_total")
	assert.False(t, ok, "no unlabelled series")
	v, ok = s.Get("volanogo_connections_closed_total", "reason", `odd } " label`)
	assert.True(t, ok, "an escaped quote and a brace in a label value")
	assert.Equal(t, 4.0, v)
	v, _ = s.Get("go_gc_duration_seconds", "quantile", "0.5")
	assert.True(t, math.IsNaN(v))
	v, _ = s.Get("go_gc_duration_seconds_count")
	assert.Equal(t, 7.0, v)
	v, _ = s.Get("latency_seconds_bucket", "le", "+Inf")
	assert.Equal(t, 2.0, v)
	v, _ = s.Get("up")
	assert.True(t, math.IsInf(v, 1))
}

// TestSeriesKeyedByLabels: the same series written with its labels in
// another order, spaced or with a trailing comma is found by its labels.
func TestSeriesKeyedByLabels(t *testing.T) {
	s, err := Parse(strings.NewReader(page))
	require.NoError(t, err)
	v, ok := s.Get("volanogo_connections_refused_total", "listener", "chat", "reason", "open_files")
	assert.True(t, ok)
	assert.Equal(t, 5.0, v)
	v, ok = s.Get("volanogo_connections_refused_total", "reason", "open_files", "listener", "ws")
	assert.True(t, ok)
	assert.Equal(t, 6.0, v)
	_, ok = s.Get("volanogo_connections_refused_total", "reason", "open_files")
	assert.False(t, ok, "Get wants every label")
	sum, ok := s.Sum("volanogo_connections_refused_total", "reason", "open_files")
	assert.True(t, ok, "Sum wants the labels given")
	assert.Equal(t, 11.0, sum)
	_, ok = s.Sum("volanogo_connections_refused_total", "reason", "eof")
	assert.False(t, ok)
	_, ok = s.Get("volanogo_connections_refused_total", "reason")
	assert.False(t, ok, "an odd number of label arguments matches nothing")
	_, ok = s.Sum("nothing")
	assert.False(t, ok)
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"novalue", `x{a="b" 1`, "x abc", "x 1 2 3", "{a=\"b\"} 1",
		"# TYPE x counter\nx 1\n# TYPE x counter\nx 2\n", `x{a="b",a="c"} 1`} {
		_, err := Parse(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
	_, err := Parse(strings.NewReader("x " + strings.Repeat("1", MaxBytes)))
	assert.ErrorIs(t, err, errTooLarge)
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	s, err := Scrape(context.Background(), nil, srv.URL+"/metrics")
	require.NoError(t, err)
	v, _ := s.Get("process_cpu_seconds_total")
	assert.Equal(t, 12.34, v)
	_, err = Scrape(context.Background(), nil, srv.URL+"/nope")
	assert.ErrorContains(t, err, "404")
}

// TestScrapeRegistry scrapes what client_golang serves, as volanogo serve
// does: the handler negotiates the protocol-buffer format.
func TestScrapeRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "volanogo_connections_refused_total", Help: "h"}, []string{"reason"})
	refused.WithLabelValues("open_files").Add(3)
	refused.WithLabelValues("other").Add(1)
	reg.MustRegister(refused, collectors.NewGoCollector())
	var format string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		format = w.Header().Get("Content-Type")
	}))
	defer srv.Close()
	s, err := Scrape(context.Background(), nil, srv.URL)
	require.NoError(t, err)
	assert.Contains(t, format, "application/vnd.google.protobuf", "the handler chose protocol buffers")
	v, ok := s.Get("volanogo_connections_refused_total", "reason", "open_files")
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
	sum, _ := s.Sum("volanogo_connections_refused_total")
	assert.Equal(t, 4.0, sum)
	g, ok := s.Get("go_goroutines")
	assert.True(t, ok)
	assert.Positive(t, g)
}

// TestHistogramQuantiles: a histogram's buckets between two scrapes give
// the quantiles of what happened in between, as bucket upper bounds.
func TestHistogramQuantiles(t *testing.T) {
	page := func(c1, c2, c3, inf float64) Samples {
		s, err := Parse(strings.NewReader(fmt.Sprintf(`# TYPE p histogram
p_bucket{le="0.001"} %g
p_bucket{le="0.002"} %g
p_bucket{le="0.004"} %g
p_bucket{le="+Inf"} %g
p_sum 1
p_count %g
`, c1, c2, c3, inf, inf)))
		require.NoError(t, err)
		return s
	}
	a, an, ok := page(10, 10, 10, 10).Histogram("p")
	require.True(t, ok)
	b, bn, ok := page(10, 110, 111, 111).Histogram("p")
	require.True(t, ok)
	require.Len(t, b, 4)
	assert.True(t, math.IsInf(b[3].UpperBound, 1))
	d, n := HistogramDelta(a, b, an, bn)
	assert.Equal(t, 101.0, n)
	p99, ok := Quantile(d, n, 0.99)
	require.True(t, ok)
	assert.Equal(t, 0.002, p99)
	m, ok := Max(d, n)
	require.True(t, ok)
	assert.Equal(t, 0.004, m)
	_, ok = Quantile(d, 0, 0.99)
	assert.False(t, ok, "nothing happened")
	late, ln := HistogramDelta(a, page(10, 10, 10, 12).mustHist(t), an, 12)
	m, _ = Max(late, ln)
	assert.True(t, math.IsInf(m, 1), "past the last finite bucket")
	_, _, ok = Samples{}.Histogram("p")
	assert.False(t, ok)
}

func (s Samples) mustHist(t *testing.T) []Bucket {
	b, _, ok := s.Histogram("p")
	require.True(t, ok)
	return b
}
