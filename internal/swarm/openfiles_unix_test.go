//go:build unix

package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv("VOLANOGO_TEST_OPENFILES"); addr != "" {
		os.Exit(helperOpenFiles(addr))
	}
	os.Exit(m.Run())
}

// helperOpenFiles runs in a child process: it lowers its open-files limit
// to 64 and runs 4 rooms of 20 users (80 connections), and prints the
// document.
func helperOpenFiles(addr string) int {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 64, Max: 64}); err != nil {
		return 3
	}
	spec := Spec{Rooms: []int{1, 2, 3, 4}, Users: 20, Count: 2, StallTimeout: 5 * time.Second}
	d, err := Run(context.Background(), spec, Target{Transport: TransportTCP, Addr: addr}, &observer{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	if err := json.NewEncoder(os.Stdout).Encode(d); err != nil {
		return 5
	}
	return 0
}

func TestOpenFilesLimit(t *testing.T) {
	s := startServer(t, server.Config{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_OPENFILES="+s.Addr().String())
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("exit %d: %s", ee.ExitCode(), ee.Stderr)
	}
	require.NoError(t, err)
	var d results.Document
	require.NoError(t, json.Unmarshal(out, &d))
	assert.False(t, d.Passed)
	f := failure(&d, results.FailOpenFiles)
	require.NotNil(t, f, "failures: %+v", d.Failures)
	assert.Contains(t, f.Example, "open-files limit 64")
	assert.Less(t, d.Connections.Established, int64(80))
}
