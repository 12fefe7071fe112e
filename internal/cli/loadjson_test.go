package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

func startServer(t *testing.T) (host, port string) {
	t.Helper()
	s, err := server.New(server.Config{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	host, port, _ = net.SplitHostPort(s.Addr().String())
	return host, port
}

// decodeLine decodes the --json line strictly: every field known.
func decodeLine(t *testing.T, line string) jsonLine {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var l jsonLine
	require.NoError(t, dec.Decode(&l), line)
	return l
}

func TestLoadJSON(t *testing.T) {
	host, port := startServer(t)
	dir := t.TempDir()
	code, out, errOut := run(t, "load", "--json", "-host", host, "-port", port, "-rooms", "2", "-users", "3", "-count", "4",
		"-file", filepath.Join(dir, "volano-mark.log"))
	require.Equal(t, 0, code, errOut)
	// Standard output is the line alone; Mark's text went to stderr.
	require.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, errOut, "Total messages     = 72")
	assert.True(t, strings.HasPrefix(out, `{"volanogo": 1, "verdict": "pass", "exit": 0, "score": `), out)
	l := decodeLine(t, out)
	assert.Equal(t, "pass", l.Verdict)
	assert.Equal(t, 0, l.Exit)
	assert.Equal(t, 2, l.Rooms)
	assert.Equal(t, 3, l.Users)
	assert.Equal(t, 4, l.Count)
	assert.Equal(t, 1, l.Runs)
	assert.Equal(t, 1, l.Passed)
	assert.Zero(t, l.Failures)
	assert.Positive(t, l.MsgsPerSec)
	require.NotNil(t, l.ClientCPUPerMsgUs)
	assert.Positive(t, *l.ClientCPUPerMsgUs)
	assert.Nil(t, l.ServerCPUPerMsgUs, "no --serve, no --server-metrics: unknown")
	assert.NotEmpty(t, l.RunID)
	require.Len(t, l.Steps, 1)
	assert.Equal(t, l.MsgsPerSec, l.Steps[0].MsgsPerSec)

	// Nothing listening: the verdict is fail, exit 1, no run (the check
	// before the runs found no server).
	code, out, _ = run(t, "load", "--json", "-host", "127.0.0.1", "-port", "1", "-rooms", "1", "-users", "2", "-count", "1", "-file", "")
	assert.Equal(t, 1, code)
	l = decodeLine(t, out)
	assert.Equal(t, "fail", l.Verdict)
	assert.Equal(t, 1, l.Exit)
	assert.Zero(t, l.Runs)
	assert.Zero(t, l.Score)
	assert.Zero(t, l.MsgsPerSec)
}

// TestLoadJSONWithDocuments: -o - and --json share standard output, the
// documents first, one a line, then the result line.
func TestLoadJSONWithDocuments(t *testing.T) {
	host, port := startServer(t)
	code, out, errOut := run(t, "load", "--json", "-o", "-", "-host", host, "-port", port, "-rooms", "1", "-users", "2", "-count", "2", "-file", "")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, out)
	_, err := results.Read(strings.NewReader(lines[0]), "-")
	require.NoError(t, err)
	decodeLine(t, lines[1])
}

// TestDocumentsThroughALog is what deploy/kubernetes/README.md does with a
// shard's log: standard output and standard error in one stream, the
// document the line that begins with {"schema":.
func TestDocumentsThroughALog(t *testing.T) {
	host, port := startServer(t)
	var log strings.Builder
	code := Main(context.Background(), []string{"load", "-o", "-", "-host", host, "-port", port, "-rooms", "1", "-users", "2",
		"-count", "2", "-file", "", "--run-id", "k8s-1", "--shard", "0/1"}, nil, &log, &log)
	require.Equal(t, 0, code, log.String())
	var docs []string
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	sc.Buffer(nil, results.MaxDocumentBytes)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"schema":`) {
			docs = append(docs, sc.Text())
		}
	}
	require.Len(t, docs, 1, log.String())
	d, err := results.Read(strings.NewReader(docs[0]), "log")
	require.NoError(t, err)
	assert.Equal(t, "k8s-1", d.RunID)
	assert.True(t, d.Passed)
}

func TestJSONLineOfACampaign(t *testing.T) {
	doc := func(run int, discarded, passed bool, tput, server, client float64) *results.Document {
		d := &results.Document{RunID: "r", Run: run, Discarded: discarded, Passed: passed, Throughput: tput,
			Score: int64(tput), Client: results.Usage{CPUPerMessageMicros: client}}
		if server > 0 {
			d.Server = &results.ServerUsage{CPUPerMessageMicros: server}
		}
		if !passed {
			d.Failures = []results.Failure{{Kind: results.FailTimeout, Count: 2}}
		}
		return d
	}
	cfg := campaign.Config{Steps: []int{10, 20}}
	cfg.Spec.Users, cfg.Spec.Count = 20, 100
	res := &campaign.Result{Steps: []campaign.Step{
		{Rooms: 10, Docs: []*results.Document{doc(1, false, true, 1000, 10, 5)}, Tally: results.Tally{Score: 1000}, Passed: true},
		{Rooms: 20, Docs: []*results.Document{
			doc(1, true, true, 5000, 1, 1), // discarded: not in the means
			doc(2, false, true, 1000, 10, 4),
			doc(3, false, true, 3000, 20, 6),
			doc(4, false, false, 9000, 30, 30), // failed: not in the means
		}, Tally: results.Tally{Score: 2000}},
	}}
	l := newJSONLine(cfg, res, &ExitError{Code: 1})
	assert.Equal(t, "fail", l.Verdict)
	assert.Equal(t, 1, l.Exit)
	assert.Equal(t, 20, l.Rooms)
	assert.Equal(t, int64(2000), l.Score)
	assert.Equal(t, 2000.0, l.MsgsPerSec)
	require.NotNil(t, l.ServerCPUPerMsgUs)
	assert.Equal(t, 15.0, *l.ServerCPUPerMsgUs)
	assert.Equal(t, 5.0, *l.ClientCPUPerMsgUs)
	assert.Equal(t, int64(2), l.Failures)
	assert.Equal(t, 5, l.Runs)
	assert.Equal(t, 4, l.Passed)
	assert.Equal(t, "r", l.RunID)
	require.Len(t, l.Steps, 2)
	assert.Equal(t, int64(1000), l.Steps[0].Score)
	assert.True(t, l.Steps[0].Passed)

	// A tally without a score gives 0, not the average of the best.
	res.Steps[1].Tally.Failed = true
	assert.Zero(t, newJSONLine(cfg, res, nil).Score)

	// The exit statuses.
	for err, want := range map[error]string{nil: "pass", &ExitError{Code: exitInterrupted}: "interrupted",
		&UsageError{Err: errors.New("x")}: "fail", errors.New("x"): "fail"} {
		assert.Equal(t, want, newJSONLine(cfg, nil, err).Verdict, "%v", err)
	}
	assert.Equal(t, exitUsage, newJSONLine(cfg, nil, &UsageError{Err: errors.New("x")}).Exit)
}

func TestSpaced(t *testing.T) {
	assert.Equal(t, `{"a": 1, "b": "x,y:\"z,", "c": [1, 2]}`, string(spaced([]byte(`{"a":1,"b":"x,y:\"z,","c":[1,2]}`))))
	var v map[string]any
	require.NoError(t, json.Unmarshal(spaced([]byte(`{"a":"\\","b":{"c":null}}`)), &v))
	assert.Equal(t, `\`, v["a"])
}
