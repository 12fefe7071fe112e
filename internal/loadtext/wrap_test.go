package loadtext

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
)

// TestFold: a line wider than the width breaks after a comma or a
// semicolon in its second half, else at a space, and goes on under the
// value of a "Label = value" line; a short line is left as it is.
func TestFold(t *testing.T) {
	assert.Equal(t, "Elapsed time       = 1.0 second", Fold("Elapsed time       = 1.0 second", 80))
	got := Fold("Storm              = 10 of 10 users dropped at 1.33 s, 10 back (reconnect p50 18.6 ms, p99 47.2 ms, max 47.2 ms), every room chatting again", 80)
	assert.Equal(t, "Storm              = 10 of 10 users dropped at 1.33 s,\n"+
		"                     10 back (reconnect p50 18.6 ms, p99 47.2 ms, max 47.2 ms),\n"+
		"                     every room chatting again", got)
	got = Fold("  run 1: "+strings.Repeat("x", 100), 40)
	for _, l := range strings.Split(got, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 40, l)
	}
	assert.Equal(t, strings.Repeat("x", 100), strings.ReplaceAll(strings.ReplaceAll(got, "\n", ""), " ", "")[len("run1:"):], "nothing lost")

	var b bytes.Buffer
	w := NewWrap(&b, 30)
	_, err := w.Write([]byte("Failure            = refused (3): connect: connection"))
	require.NoError(t, err)
	assert.Empty(t, b.String(), "a line is written whole")
	_, err = w.Write([]byte(" refused\nTest failed.\n"))
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	assert.Equal(t, "Failure            = refused\n               (3): connect:\n               connection\n"+
		"               refused\nTest failed.\n", b.String(), "an indent of half the width at most")
}

// TestRunShortFits: a run with every line and large figures prints, by
// default, within 80 columns once folded, with its main figures; the full
// form keeps every figure on one line.
func TestRunShortFits(t *testing.T) {
	carried := int64(18990)
	d := &results.Document{
		Counts:         results.Counts{Sent: 1_900_000, Received: 36_100_000, Confirms: 1_900_000},
		ElapsedSeconds: 123.456, SetupSeconds: 12.345,
		Latency: map[string]*results.Histogram{
			results.LatencyDelivery:          histogram(t, 100*time.Microsecond, 2*time.Millisecond, 1500*time.Millisecond),
			results.LatencyDeliveryScheduled: histogram(t, 100*time.Microsecond, 2*time.Millisecond, 1500*time.Millisecond),
			results.LatencyTurn:              histogram(t, 100*time.Microsecond, 2*time.Millisecond, 1500*time.Millisecond),
			results.LatencyFanoutFirst:       histogram(t, 50*time.Microsecond, 1200*time.Millisecond),
			results.LatencyFanoutLast:        histogram(t, 900*time.Microsecond, 1300*time.Millisecond),
			results.LatencyFanoutSpread:      histogram(t, 850*time.Microsecond, 1100*time.Millisecond),
		},
		Connections: results.Connections{Attempted: 19000, Established: 19000, Carried: &carried, Peak: 19000, ConnectRate: 998},
		Config:      results.Config{ConnectRate: 1000, ServerCommand: []string{"volanogo", "serve"}},
		Environment: results.Environment{CPUs: 64},
		Client:      results.Usage{CPUUserSeconds: 123.4, CPUSystemSeconds: 234.5, PeakRSSBytes: 3 << 30, CPUPerMessageMicros: 123.45},
		Server: &results.ServerUsage{CPUSeconds: 1234.5, CPUPercent: 1234.5, CPUPerMessageMicros: 234.56, RSSStartBytes: 2 << 30, RSSEndBytes: 3 << 30,
			GCPauses: 12345, GCPauseP99Seconds: 0.0123, GCPauseMaxSeconds: 0.123},
		TCP:       &results.TCPCounters{SegmentsOut: 123_456_789, Retransmitted: 12345, DelayedACKs: 1_234_567, LossProbes: 1234},
		Integrity: &results.Integrity{Receivers: 19000},
		Warnings:  []string{"the server's usage is unknown: scrape http://127.0.0.1:9090/metrics: dial tcp 127.0.0.1:9090: connect: connection refused"},
	}
	d.Derive()
	var full, short bytes.Buffer
	Run(&full, d)
	w := NewWrap(&short, Width)
	RunShort(w, d)
	require.NoError(t, w.Flush())
	for _, l := range strings.Split(short.String(), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), Width, "%q", l)
	}
	for _, want := range []string{
		"Delivery latency   = p50 2.00 ms, p99 1.50 s, p99.9 1.50 s, max 1.50 s\n",
		"Fan-out            = p99: first 1.20 s, last 1.30 s, spread 1.10 s\n",
		"Client CPU         = 9.42 µs per message, 290% of one processor, RSS 3072.0 MiB\n",
		"Connections        = 19000 of 19000, 18990 in rooms, peak 19000,\n                     set-up 12.345 s, 998 a second of the 1000 asked\n",
		"Integrity          = nothing lost, duplicated, corrupted or reordered\n",
		"Server CPU         = 32.49 µs per message, 1234% of one processor,\n                     RSS 3072.0 MiB\n",
	} {
		assert.Contains(t, short.String(), want)
	}
	assert.Contains(t, full.String(), "Delivery latency   = p50 2.00 ms, p90 1.50 s, p99 1.50 s, p99.9 1.50 s, max 1.50 s\n", "-v and the log: every figure")
	assert.Contains(t, full.String(), "Server CPU         = 1234.50 s (1234% of one processor, 19% of the machine's 64), 32.49 µs per message, RSS 2048.0 MiB -> 3072.0 MiB\n")

	var sum bytes.Buffer
	w = NewWrap(&sum, Width)
	d.Run, d.Score, d.Passed = 1, 298_765, true
	SummaryShort(w, []campaign.Step{{Rooms: 950, Docs: []*results.Document{d}}})
	require.NoError(t, w.Flush())
	assert.Contains(t, sum.String(), "  run 1: 298765 msg/s; CPU/msg: server 32.49, client 9.42 µs\n")

	// The score line fits too, the run rule's words and all.
	sum.Reset()
	steps := []campaign.Step{{Rooms: 2, Docs: []*results.Document{}}}
	for run := 1; run <= 5; run++ {
		steps[0].Docs = append(steps[0].Docs, &results.Document{Run: run, Passed: true, Score: int64(90000 + run), Discarded: run == 1, Config: results.Config{Users: 20}})
	}
	counted, _, _ := results.DefaultRunRule.Counted(steps[0].Docs)
	steps[0].Tally = results.DefaultRunRule.Tally(counted)
	SummaryShort(&sum, steps)
	assert.Contains(t, sum.String(), "  score (best 2 of 3; the last 1 not counted) = 90004 msg/s, median 90003\n")
}
