package campaign

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// TestRetryWorksOnSecondTry: a server that fails its first start is
// started again (--retry 1); the run passes on the second try, whose
// document names the first try's cause, and the first try's document is
// marked superseded.
func TestRetryWorksOnSecondTry(t *testing.T) {
	checkGoroutines(t)
	serveArgv(t, false)
	once := filepath.Join(t.TempDir(), "failed-once")
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --fail-once " + once,
		Steps: []int{1}, Runs: 1, Retry: 1,
		Spec: swarm.Spec{Users: 3, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, rec.docs, 2, "both tries go to the sink")
	first, second := rec.docs[0], rec.docs[1]
	require.NotNil(t, first.Retry)
	assert.Equal(t, results.Retry{Attempt: 1, Of: 2, Superseded: true}, *first.Retry)
	assert.False(t, first.Passed)
	assert.Contains(t, first.Failures[0].Example, "Too many open files", "the server's own words")
	require.True(t, second.Passed, "%+v", second.Failures)
	require.NotNil(t, second.Retry)
	assert.Equal(t, 2, second.Retry.Attempt)
	assert.False(t, second.Retry.Superseded)
	require.Len(t, second.Retry.Earlier, 1)
	assert.Equal(t, results.FailServerStart, second.Retry.Earlier[0].Kind)
	assert.NotEqual(t, first.RunID, second.RunID)
	require.Len(t, res.Steps, 1)
	assert.Equal(t, []*results.Document{second}, res.Steps[0].Docs, "the step counts the last try")
	assert.True(t, res.Steps[0].Passed)
}

// TestRetryGivesUp: a run that fails every try fails, after 1+N tries.
func TestRetryGivesUp(t *testing.T) {
	checkGoroutines(t)
	serveArgv(t, false)
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --max-connections 2",
		Steps: []int{1}, Runs: 1, Retry: 2,
		Spec: swarm.Spec{Users: 3, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed, rec.out())
	require.Len(t, rec.docs, 3)
	last := rec.docs[2]
	require.NotNil(t, last.Retry)
	assert.Equal(t, 3, last.Retry.Attempt)
	assert.False(t, last.Retry.Superseded, "the last try stands")
	assert.Len(t, last.Retry.Earlier, 2)
	for _, d := range rec.docs[:2] {
		assert.True(t, d.Retry.Superseded)
	}
}
