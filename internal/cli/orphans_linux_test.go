package cli

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// children lists the pids whose parent is pid (from /proc).
func children(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			if k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(st, "/proc/"), "/stat")); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// waitRunning waits until the progress line on r says the timed phase
// runs, and reads the rest of r in the background.
func waitRunning(t *testing.T, r io.Reader) {
	t.Helper()
	running := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		sc.Split(bufio.ScanRunes)
		var line strings.Builder
		for sc.Scan() {
			line.WriteString(sc.Text())
			if strings.Contains(line.String(), "running: ") {
				close(running)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-running:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not start within 20 s")
	}
}

// TestKillLeavesNoOrphans: kill -9 of `volanogo load --serve --procs 2`
// while it runs leaves neither its server nor its shards running (they die
// with it), and no temporary directory behind.
func TestKillLeavesNoOrphans(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "load", "--serve", "--procs", "2", "-runs", "1", "-rooms", "2", "-users", "2",
		"-count", "0", "-pause", "100ms", "--duration", "1m", "-file", "", "--progress")
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1", "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitRunning(t, stderr)
	kids := children(cmd.Process.Pid)
	require.Len(t, kids, 3, "the server and two shards")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for alive(k) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		assert.False(t, alive(k), "process %d outlived its parent", k)
	}
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing left in the temporary directory")
}

// TestTerminalInterrupt: a terminal's Ctrl-C signals the whole foreground
// process group. The shards have groups of their own, so only load gets
// it; it interrupts its shards once, and their merged document is written,
// marked interrupted, with both shards in it.
func TestTerminalInterrupt(t *testing.T) {
	s := startTestServer(t)
	doc := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.Command(os.Args[0], "load", "--procs", "2", "-host", "127.0.0.1", "-port", strconv.Itoa(s.Addr().(*net.TCPAddr).Port),
		"-rooms", "2", "-users", "2", "-count", "0", "-pause", "50ms", "--duration", "1h", "-file", "", "-o", doc, "--progress")
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the terminal's foreground group
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitRunning(t, stderr)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 130, ee.ExitCode(), "an interrupted command exits 128 + SIGINT")
	case <-time.After(20 * time.Second):
		t.Fatal("load did not end within 20 s of the interrupt")
	}
	assert.Contains(t, out.String(), "Test interrupted.")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.True(t, d.Interrupted)
	assert.Equal(t, 2, d.Shards, "both shards wrote their documents")
	assert.Positive(t, d.Counts.Sent)
	for _, f := range d.Failures {
		assert.NotEqual(t, results.FailShard, f.Kind, "no shard failed of the terminal's signal: %+v", f)
	}
}
