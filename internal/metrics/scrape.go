// Package metrics reads Prometheus metrics: a small parser of the text
// exposition format, enough for `volanogo load` to read a server's CPU and
// memory (process_cpu_seconds_total, process_resident_memory_bytes) at the
// start and the end of a timed phase.
package metrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Samples maps a series to its value. The key is the metric name, followed
// by its labels exactly as exposed when it has any:
// `volanogo_connections_closed_total{reason="eof"}`.
type Samples map[string]float64

// Get returns the value of the unlabelled series name.
func (s Samples) Get(name string) (float64, bool) {
	v, ok := s[name]
	return v, ok
}

// Sum adds every series of the metric name, labelled or not.
func (s Samples) Sum(name string) (float64, bool) {
	var sum float64
	found := false
	for k, v := range s {
		if k == name || (strings.HasPrefix(k, name) && len(k) > len(name) && k[len(name)] == '{') {
			sum += v
			found = true
		}
	}
	return sum, found
}

// MaxBytes bounds a scraped page.
const MaxBytes = 8 << 20

// Parse reads the Prometheus text format: comments and blank lines are
// skipped, each other line is `name[{labels}] value [timestamp]`. Values
// may be floats, NaN or ±Inf. A line that cannot be read is an error
// naming its number.
func Parse(r io.Reader) (Samples, error) {
	out := Samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		series, rest, err := splitSeries(t)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", line, err)
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 {
			return nil, fmt.Errorf("metrics line %d: want a value after %q", line, series)
		}
		v, err := parseValue(fields[0])
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", line, err)
		}
		out[series] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}

// splitSeries returns the series (name and labels) and the rest of a line.
func splitSeries(t string) (series, rest string, err error) {
	i := strings.IndexAny(t, "{ \t")
	if i < 0 {
		return "", "", fmt.Errorf("no value in %q", t)
	}
	if i == 0 {
		return "", "", fmt.Errorf("no metric name in %q", t)
	}
	if t[i] != '{' {
		return t[:i], t[i:], nil
	}
	// Labels: find the closing brace outside quoted values.
	inQuote, esc := false, false
	for j := i + 1; j < len(t); j++ {
		c := t[j]
		switch {
		case esc:
			esc = false
		case c == '\\' && inQuote:
			esc = true
		case c == '"':
			inQuote = !inQuote
		case c == '}' && !inQuote:
			return t[:j+1], t[j+1:], nil
		}
	}
	return "", "", fmt.Errorf("unterminated labels in %q", t)
}

func parseValue(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", s)
	}
	return v, nil
}

// Scrape fetches url and parses it. A nil client uses one with a 5-second
// timeout.
func Scrape(ctx context.Context, client *http.Client, url string) (Samples, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	s, err := Parse(io.LimitReader(resp.Body, MaxBytes))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return s, nil
}
