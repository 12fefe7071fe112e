package results

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocExample reads the example document of the package comment: it must
// stay a valid document.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(src), "// # Example\n")
	require.True(t, ok)
	var js strings.Builder
	in := false
	for _, line := range strings.Split(after, "\n") {
		if line == "//\t{" {
			in = true
		}
		if in {
			js.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		}
		if line == "//\t}" {
			break
		}
	}
	d, err := Read(strings.NewReader(js.String()), "doc.go example")
	require.NoError(t, err)
	assert.Equal(t, int64(600000), d.Counts.Total)
	score, ok := MarkScore(d.Counts.Total, int64(d.ElapsedSeconds*1000+0.5))
	require.True(t, ok)
	assert.Equal(t, score, d.Score)
	assert.Equal(t, d.TimedEnd.Sub(d.TimedStart).Seconds(), d.ElapsedSeconds)
	h, err := d.Latency[LatencyDelivery].Decode()
	require.NoError(t, err)
	again, err := EncodeHistogram(h)
	require.NoError(t, err)
	assert.Equal(t, d.Latency[LatencyDelivery], again, "the summary is the histogram's")
	assert.Equal(t, d.Counts.Received, h.TotalCount())
}

func ExampleMarkScore() {
	score, ok := MarkScore(2_000_000, 40_115)
	fmt.Println(score, ok)
	_, ok = MarkScore(600, 999)
	fmt.Println(ok)
	// Output:
	// 49857 true
	// false
}

func ExampleFormatMarkSeconds() {
	for _, ms := range []int64{40_115, 1_000, 12_500, 10_000_000_000} {
		fmt.Println(FormatMarkSeconds(ms))
	}
	// Output:
	// 40.115
	// 1.0
	// 12.5
	// 1.0E7
}

func ExampleClassify() {
	err := fmt.Errorf("accept: %w", os.NewSyscallError("accept4", syscall.EMFILE))
	kind := Classify(err)
	fmt.Println(kind + ": " + Describe(kind))
	// Output:
	// open_files: too many open files
}

func ExampleTimelineRecorder() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewTimelineRecorder(start)
	r.Add(start.Add(300*time.Millisecond), 1, 19) // one chat, 19 indications
	r.Add(start.Add(1500*time.Millisecond), 1, 19)
	r.Add(start.Add(2900*time.Millisecond), 0, 0) // the end of the timed phase
	tl := r.Timeline()
	fmt.Println(tl.IntervalSeconds, tl.Sent, tl.Received)
	// Output:
	// 1 [1 1 0] [19 19 0]
}

func ExampleFailureSet() {
	var fs FailureSet
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fs.AddError(fmt.Errorf("room 7: %w", io.EOF), at.Add(2*time.Second))
	fs.Add(FailStall, "room 3: no progress for 30s after ChatIndication", at.Add(time.Second))
	fs.AddError(fmt.Errorf("room 2: %w", io.EOF), at)
	for _, f := range fs.List() {
		fmt.Printf("%s x%d: %s\n", Describe(f.Kind), f.Count, f.Example)
	}
	// Output:
	// connection closed by the server x2: room 2: EOF
	// a room stalled x1: room 3: no progress for 30s after ChatIndication
}
