package metrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.34
process_resident_memory_bytes 2.5e+07
volanogo_connections_closed_total{reason="eof"} 3
volanogo_connections_closed_total{reason="odd } \" label"} 4 1700000000000
go_gc_duration_seconds{quantile="0.5"} NaN
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
	assert.False(t, ok)
	assert.True(t, math.IsNaN(s[`go_gc_duration_seconds{quantile="0.5"}`]))
	assert.True(t, math.IsInf(s["up"], 1))
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"novalue", `x{a="b" 1`, "x abc", "x 1 2 3", "{a=\"b\"} 1"} {
		_, err := Parse(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
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
