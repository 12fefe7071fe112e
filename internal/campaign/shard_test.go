package campaign

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/swarm"
)

// shardSession runs RunShard on pipes and returns its input and the lines
// it writes, one by one.
func shardSession(t *testing.T, spec ShardSpec) (in io.WriteCloser, lines <-chan string, done <-chan error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := RunShard(context.Background(), inR, outW)
		_ = outW.Close()
		_ = inR.Close()
		errc <- err
	}()
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, maxShardLine)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	_, err = inW.Write(append(b, '\n'))
	require.NoError(t, err)
	return inW, ch, errc
}

func next(t *testing.T, lines <-chan string) (handshake.ShardLine, string) {
	t.Helper()
	select {
	case l, ok := <-lines:
		require.True(t, ok, "the shard's output ended")
		return handshake.ParseShardLine(l)
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the shard in 10 s")
	}
	return 0, ""
}

// until reads lines until one of kind, skipping progress lines.
func until(t *testing.T, lines <-chan string, kind handshake.ShardLine) string {
	t.Helper()
	for {
		k, payload := next(t, lines)
		if k == kind {
			return payload
		}
		require.Equal(t, handshake.LineProgress, k, "unexpected line %q", payload)
	}
}

func TestRunShard(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	spec := ShardSpec{Index: 0, Count: 1, Target: swarm.Target{Transport: swarm.TransportTCP, Addr: s.Addr().String()},
		Spec: swarm.Spec{Rooms: []int{1, 2}, Users: 3, Count: 4, StallTimeout: 5 * time.Second, StrictOrder: true}}
	in, lines, done := shardSession(t, spec)
	until(t, lines, handshake.LineReady)
	_, err := io.WriteString(in, handshake.Start(time.Now())+"\n")
	require.NoError(t, err)
	until(t, lines, handshake.LineEnded)
	payload := until(t, lines, handshake.LineDocument)
	d, err := results.Read(strings.NewReader(payload), "shard")
	require.NoError(t, err)
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, int64(24), d.Counts.Sent)
	require.NoError(t, <-done)
	require.NoError(t, in.Close())
}

// TestRunShardCalledOff: the end of the input before the start calls the
// shard's run off; it still writes its document, which says why.
func TestRunShardCalledOff(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	spec := ShardSpec{Index: 1, Count: 2, Target: swarm.Target{Transport: swarm.TransportTCP, Addr: s.Addr().String()},
		Spec: swarm.Spec{Rooms: []int{3}, Users: 2, Count: 4, StallTimeout: 5 * time.Second}}
	in, lines, done := shardSession(t, spec)
	until(t, lines, handshake.LineReady)
	require.NoError(t, in.Close())
	payload := until(t, lines, handshake.LineEnded)
	_ = payload
	payload = until(t, lines, handshake.LineDocument)
	d, err := results.Read(strings.NewReader(payload), "shard")
	require.NoError(t, err)
	assert.False(t, d.Passed)
	require.Len(t, d.Failures, 1)
	assert.Equal(t, results.FailShard, d.Failures[0].Kind)
	assert.Contains(t, d.Failures[0].Example, "another shard failed")
	assert.ErrorIs(t, <-done, ErrFailed)
}

func TestRunShardBadSpec(t *testing.T) {
	err := RunShard(context.Background(), strings.NewReader("{not json\n"), io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read the shard's spec")
	err = RunShard(context.Background(), strings.NewReader(""), io.Discard)
	require.Error(t, err)
}
