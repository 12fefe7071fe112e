//go:build unix

package load

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

// helperOpenFiles runs in a child process: it lowers its open-files limit
// to 64 and runs a load that needs 80 connections.
func helperOpenFiles() int {
	lim := syscall.Rlimit{Cur: 64, Max: 64}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 3
	}
	host, port, _ := splitHostPort(os.Getenv("VOLANOGO_TEST_OPENFILES"))
	cfg := Config{Host: host, Port: port, Steps: []int{4}, Users: 20, Count: 2,
		StallTimeout: 5 * time.Second, Output: os.Getenv("VOLANOGO_TEST_OUT")}
	_, err := Run(context.Background(), cfg, os.Stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrFailed):
		return 1
	}
	os.Stderr.WriteString(err.Error() + "\n")
	return 4
}

func TestOpenFilesLimit(t *testing.T) {
	s := startServer(t, server.Config{})
	out := t.TempDir() + "/run.json"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_OPENFILES="+s.Addr().String(), "VOLANOGO_TEST_OUT="+out)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "err %v: %s", err, b)
	require.Equal(t, 1, ee.ExitCode(), "%s", b)
	d, err := results.ReadFile(out)
	require.NoError(t, err)
	f := failure(d, results.FailOpenFiles)
	require.NotNil(t, f, "failures: %+v", d.Failures)
	assert.Contains(t, f.Example, "open-files limit 64")
	assert.Less(t, d.Connections.Established, int64(80))
	assert.Equal(t, int64(64), d.Environment.OpenFilesSoft)
}

// setOpenFilesLimit sets this process's open-files limit (soft and hard).
func setOpenFilesLimit(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
