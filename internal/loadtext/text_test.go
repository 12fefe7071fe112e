package loadtext

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
)

func TestMarkLinesGolden(t *testing.T) {
	for _, tc := range []struct {
		sent, received, ms int64
		want               string
	}{
		{100000, 1900000, 40115, `VolanoMark version = 2.13.4
Messages sent      = 100000
Messages received  = 1900000
Total messages     = 2000000
Elapsed time       = 40.115 seconds
Average throughput = 49857 messages per second
`},
		{30000, 570000, 1000, `VolanoMark version = 2.13.4
Messages sent      = 30000
Messages received  = 570000
Total messages     = 600000
Elapsed time       = 1.0 second
Average throughput = 600000 messages per second
`},
		{60, 180, 999, `VolanoMark version = 2.13.4
Messages sent      = 60
Messages received  = 180
Total messages     = 240
Elapsed time       < 1 second
`},
	} {
		var b bytes.Buffer
		MarkLines(&b, tc.sent, tc.received, tc.ms)
		assert.Equal(t, tc.want, b.String())
	}
}

func histogram(t *testing.T, values ...time.Duration) *results.Histogram {
	h := results.NewHistogram()
	for _, v := range values {
		require.NoError(t, h.RecordValue(int64(v)))
	}
	e, err := results.EncodeHistogram(h)
	require.NoError(t, err)
	return e
}

func TestRun(t *testing.T) {
	d := &results.Document{
		Counts:         results.Counts{Sent: 30000, Received: 570000, Confirms: 30000},
		ElapsedSeconds: 2.5,
		Latency: map[string]*results.Histogram{
			results.LatencyDelivery:     histogram(t, 100*time.Microsecond, 2*time.Millisecond),
			results.LatencyFanoutFirst:  histogram(t, 50*time.Microsecond),
			results.LatencyFanoutLast:   histogram(t, 900*time.Microsecond),
			results.LatencyFanoutSpread: histogram(t, 850*time.Microsecond),
		},
		Connections: results.Connections{Attempted: 300, Established: 300, Peak: 300},
		Client:      results.Usage{CPUUserSeconds: 1, CPUSystemSeconds: 2, PeakRSSBytes: 30 << 20},
		Integrity: &results.Integrity{Reordered: 534, MaxDisplacement: 3, ReceiversReordered: 30, Receivers: 300, SenderReordered: 0,
			FirstReordered: "Mark19 in Room3: chat 34 of the room (Mark14's) arrived after chat 35 (1 later)",
			Outside:        &results.Outside{Chats: 60, Exited: 40}},
		Warnings: []string{"the server's usage is unknown: scrape http://x/metrics: connection refused"},
	}
	d.Derive()
	var b bytes.Buffer
	Run(&b, d)
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "VolanoMark version = 2.13.4\nMessages sent      = 30000\n"), out)
	for _, want := range []string{
		"Average throughput = 240000 messages per second\n",
		"Fan-out            = first p50 50.0 µs, p99 50.0 µs; last p50 900 µs, p99 900 µs; spread p50 850 µs, p99 850 µs (1 broadcasts)\n",
		"Integrity          = 0 lost, 0 duplicated, 0 corrupted; 534 reordered (30 of 300 receivers, 10%; at most 3 chats late), 0 out of sender order\n",
		"Other users        = 60 chats, 0 entries, 40 exits seen by the run's users (counted apart)\n",
		"First reordered    = Mark19 in Room3: chat 34 of the room (Mark14's) arrived after chat 35 (1 later)\n",
		"Warning            = the server's usage is unknown: scrape http://x/metrics: connection refused\n",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "Test failed.")
	assert.NotContains(t, out, "Server coalescing")

	// A server's coalescing window changes what it measured: said.
	d.Server = &results.ServerUsage{CPUSeconds: 1, CoalesceSeconds: 0.0005}
	b.Reset()
	Run(&b, d)
	assert.Contains(t, b.String(), "Server coalescing  = 500µs (serve --coalesce: an epoll loop waits so long after a round of few events)\n")
	d.Server = nil

	// Whispers, beeps, private sessions and other packets, when any.
	d.Integrity.Outside = &results.Outside{Chats: 60, Whispers: 1, Beeps: 2, PrivateEntered: 1, PrivateChats: 3, PrivateExited: 1,
		Other: 4, FirstOther: "Mark3 in Room1: UserList confirm"}
	b.Reset()
	Run(&b, d)
	assert.Contains(t, b.String(), "Other users        = 60 chats, 0 entries, 0 exits, 1 whispers, 2 beeps, 1 private sessions opened, "+
		"3 private chats, 1 private sessions closed, 4 other packets seen by the run's users (counted apart)\n"+
		"First other packet = Mark3 in Room1: UserList confirm\n")

	// A stall's chats in flight are said apart from the lost ones.
	d.Integrity = &results.Integrity{Receivers: 40, InFlight: 36}
	d.Failures = []results.Failure{{Kind: results.FailStall, Count: 1, Example: "Room1 made no progress for 10s"}}
	d.Derive()
	b.Reset()
	Run(&b, d)
	assert.Contains(t, b.String(), "Integrity          = 0 lost, 0 duplicated, 0 corrupted, 0 reordered, 0 out of sender order; 36 in flight when the room stalled (not counted lost)\n")

	d.Integrity = &results.Integrity{Lost: 1, Receivers: 4}
	d.Failures = []results.Failure{{Kind: results.FailLost, Count: 1, Example: "1 chats lost: Mark3 in Room1 never received chat 1 of Mark1"}}
	d.Derive()
	b.Reset()
	Run(&b, d)
	assert.Contains(t, b.String(), "Integrity          = 1 lost, 0 duplicated, 0 corrupted, 0 reordered, 0 out of sender order\n")
	assert.Contains(t, b.String(), "Failure            = lost (1): 1 chats lost: Mark3 in Room1 never received chat 1 of Mark1\n")
	assert.True(t, strings.HasSuffix(b.String(), "Test failed.\n"))
}

// A run under one second has no score: it is neither a score of 0 in the
// median nor one of the best two, and the summary says what to do.
func TestSummary(t *testing.T) {
	doc := func(run int, score int64) *results.Document {
		return &results.Document{Run: run, Passed: true, Score: score, Discarded: run == 1, Config: results.Config{Users: 20}}
	}
	step := func(docs ...*results.Document) campaign.Step {
		rule := results.DefaultRunRule
		rule.Discard = 0
		counted, _, _ := rule.Counted(docs)
		return campaign.Step{Rooms: 15, Docs: docs, Tally: rule.Tally(counted), Passed: true}
	}
	var b bytes.Buffer
	Summary(&b, []campaign.Step{step(doc(1, 0), doc(2, 0), doc(3, 400000), doc(4, 500000))})
	assert.Equal(t, `Summary
Rooms 15 (300 connections):
  run 1: no score (under 1 second) (discarded)
  run 2: no score (under 1 second)
  run 3: 400000 messages per second
  run 4: 500000 messages per second
  score (best 2 of 3) = 450000 messages per second, median 450000
`, b.String())
	// The wording follows the runs: -runs 2 counts one run; -runs 5 counts
	// three (the rule's), and says that the last was left out.
	b.Reset()
	Summary(&b, []campaign.Step{step(doc(1, 300000), doc(2, 320000))})
	assert.Contains(t, b.String(), "  score (1 counted run) = 320000 messages per second, median 320000\n")
	b.Reset()
	Summary(&b, []campaign.Step{step(doc(1, 1), doc(2, 100), doc(3, 200), doc(4, 300), doc(5, 400))})
	assert.Contains(t, b.String(), "  score (best 2 of 3; the last 1 not counted) = 250 messages per second, median 200\n")
	b.Reset()
	Summary(&b, []campaign.Step{step(doc(1, 0), doc(2, 0), doc(3, 0), doc(4, 598205))})
	assert.Contains(t, b.String(), "  score = ---- (too few counted runs lasted a second: raise -count)\n")
}

// TestNoneGotIn: a failed run that got no user into a room prints its
// connections and why, not Mark's lines of zeros; a run that measured
// anything prints them.
func TestNoneGotIn(t *testing.T) {
	d := &results.Document{
		Connections: results.Connections{Attempted: 40},
		Failures:    []results.Failure{{Kind: results.FailRefused, Count: 40, Example: "Mark1 in Room1: connect: dial tcp 127.0.0.1:8000: connect: connection refused"}},
	}
	d.Derive()
	require.True(t, NoneGotIn(d))
	for _, write := range []func(io.Writer, *results.Document){Run, RunShort} {
		var b bytes.Buffer
		write(&b, d)
		assert.Equal(t, "No user got into a room (0 of 40 connections established): nothing was measured.\n"+
			"Failure            = refused (40): Mark1 in Room1: connect: dial tcp 127.0.0.1:8000: connect: connection refused\n"+
			"Test failed.\n", b.String())
	}
	carried := int64(3)
	d.Connections.Established, d.Connections.Carried = 40, &carried
	assert.False(t, NoneGotIn(d), "3 users in rooms: a run, if a failed one")
	d.Connections.Carried = nil
	assert.False(t, NoneGotIn(d))
	d.Connections.Established, d.Passed = 0, true
	assert.False(t, NoneGotIn(d), "a passed run")
}

// An external client (--client-cmd, the original Mark) reports no
// connections: the line says so rather than "0 of 0", and keeps the set-up.
func TestRunClientCommand(t *testing.T) {
	d := &results.Document{
		Counts:         results.Counts{Sent: 800, Received: 15200},
		ElapsedSeconds: 1.3,
		SetupSeconds:   0.667,
		Config:         results.Config{ClientCommand: []string{"/bin/sh", "-c", "mark.sh -run"}},
	}
	d.Derive()
	for _, run := range []func(io.Writer, *results.Document){Run, RunShort} {
		var b bytes.Buffer
		run(&b, d)
		assert.Contains(t, b.String(), "Connections        = made by the client command (not counted), set-up 0.667 s\n")
		assert.NotContains(t, b.String(), "0 of 0")
	}

	// volanogo's own swarm keeps its counts.
	d.Config.ClientCommand = nil
	d.Connections = results.Connections{Attempted: 40, Established: 40, Peak: 40}
	var b bytes.Buffer
	RunShort(&b, d)
	assert.Contains(t, b.String(), "Connections        = 40 of 40, peak 40, set-up 0.667 s\n")
}
