package cli

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
)

// smallTmpfs mounts a tmpfs of size bytes (pages of 4 KiB) on a new
// directory, unmounted at the end; the test is skipped where mounting is
// not allowed (without CAP_SYS_ADMIN), except in CI with it.
func smallTmpfs(t *testing.T, size string, flags uintptr) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		if os.Getenv("CI") != "" && canMount() {
			require.NoError(t, err, "mount a tmpfs")
		}
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir
}

// canMount reports whether this process has CAP_SYS_ADMIN (bit 21 of its
// effective capabilities).
func canMount() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<21) != 0
		}
	}
	return false
}

// fill writes n bytes to a new file in dir.
func fill(t *testing.T, dir string, n int) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "filler"), make([]byte, n), 0o644))
}

// names lists a directory.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n []string
	for _, e := range entries {
		n = append(n, e.Name())
	}
	return n
}

// runsLoad replaces the engine with one that hands the sink runs runs
// of a small document each, calling before first.
func runsLoad(t *testing.T, runs int, before func()) *bool {
	t.Helper()
	ran := false
	old := runCampaign
	runCampaign = func(_ context.Context, _ campaign.Config, sink campaign.Sink) (*campaign.Result, error) {
		ran = true
		if before != nil {
			before()
		}
		for i := 1; i <= runs; i++ {
			info := campaign.RunInfo{Rooms: 1, Run: i, Runs: runs, Many: runs > 1}
			sink.RunStarting(info)
			d := &results.Document{RunID: "r", Counts: results.Counts{Sent: 100, Received: 1900, Total: 2000}, ElapsedSeconds: 1, Passed: true}
			d.Derive()
			if err := sink.RunDone(info, d); err != nil {
				return &campaign.Result{}, err
			}
		}
		return &campaign.Result{}, nil
	}
	oldCheck := checkTarget
	checkTarget = func(context.Context, campaign.Config) error { return nil } // no server behind the fake
	t.Cleanup(func() { runCampaign, checkTarget = old, oldCheck })
	return &ran
}

// TestLoadFullDisk: -file and -o on a full filesystem fail before any run,
// naming the file and the reason, and leave nothing behind. Before, -file
// left an empty log and load exited 0.
func TestLoadFullDisk(t *testing.T) {
	dir := smallTmpfs(t, "8k", 0)
	fill(t, dir, 8<<10)
	for _, args := range [][]string{
		{"-file", filepath.Join(dir, "volano-mark.log")},
		{"-file", "", "-o", filepath.Join(dir, "run.json")},
		{"-file", "", "-o", filepath.Join(dir, "results") + "/"},
	} {
		ran := runsLoad(t, 1, nil)
		code, _, errOut := run(t, append([]string{"load"}, args...)...)
		assert.Equal(t, 1, code, "%v: %s", args, errOut)
		assert.False(t, *ran, "%v: no run starts", args)
		assert.Contains(t, errOut, "no space left on device", args)
		assert.Contains(t, errOut, dir, "the error names where")
		assert.NotContains(t, errOut, ".tmp", "nor a temporary file's name")
		assert.Equal(t, []string{"filler"}, names(t, dir), "%v: nothing left behind", args)
	}
}

// TestLoadDiskFillsDuringRun: the filesystem fills after the probe. The
// -file log's write fails: load exits 1 naming it, and the log the
// previous run left is as it was (nothing empty or partial). A document
// that -o cannot write fails the same way.
func TestLoadDiskFillsDuringRun(t *testing.T) {
	dir := smallTmpfs(t, "12k", 0)
	log := filepath.Join(dir, "volano-mark.log")
	require.NoError(t, os.WriteFile(log, []byte("the last run's log\n"), 0o644))
	fill(t, dir, 4<<10)
	// One page left: the header fits, ten runs' lines do not.
	ran := runsLoad(t, 10, nil)
	code, out, errOut := run(t, "load", "-file", log)
	assert.True(t, *ran)
	assert.Equal(t, 1, code, errOut)
	assert.Equal(t, 10, strings.Count(out, "Messages sent      = 100\n"), "standard output has every run")
	assert.Contains(t, errOut, "volanogo load: -file: write "+log+": no space left on device")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "the last run's log\n", string(data))
	assert.ElementsMatch(t, []string{"filler", "volano-mark.log"}, names(t, dir))

	// -o: the disk fills between the probe (64 KiB) and the document.
	dir = smallTmpfs(t, "128k", 0)
	runsLoad(t, 1, func() { fill(t, dir, 128<<10) })
	doc := filepath.Join(dir, "run.json")
	code, _, errOut = run(t, "load", "-file", "", "-o", doc)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "write "+doc+": ")
	assert.Contains(t, errOut, "no space left on device")
	assert.Equal(t, []string{"filler"}, names(t, dir))
}

// TestLoadReadOnly: a read-only filesystem fails -file and -o before any
// run.
func TestLoadReadOnly(t *testing.T) {
	dir := smallTmpfs(t, "64k", syscall.MS_RDONLY)
	for _, args := range [][]string{
		{"-file", filepath.Join(dir, "volano-mark.log")},
		{"-file", "", "-o", filepath.Join(dir, "results") + "/"},
	} {
		ran := runsLoad(t, 1, nil)
		code, _, errOut := run(t, append([]string{"load"}, args...)...)
		assert.Equal(t, 1, code, "%v: %s", args, errOut)
		assert.False(t, *ran)
		assert.Contains(t, errOut, "read-only file system")
		assert.Contains(t, errOut, dir)
	}
}

// TestLoadLogWrites: the log is written whole and renamed into place
// (mode 0644, no temporary file left; an older log replaced); a device is
// written in place (/dev/null), and one that refuses writes (/dev/full)
// fails before the run.
func TestLoadLogWrites(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "volano-mark.log")
	require.NoError(t, os.WriteFile(log, []byte("old"), 0o600))
	runsLoad(t, 2, nil)
	code, _, errOut := run(t, "load", "-file", log)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "volanogo load "), "the environment first: %q", string(data[:min(40, len(data))]))
	assert.Equal(t, 2, strings.Count(string(data), "Messages sent      = 100\n"))
	fi, err := os.Stat(log)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.Equal(t, []string{"volano-mark.log"}, names(t, dir))

	runsLoad(t, 1, nil)
	code, _, errOut = run(t, "load", "-file", os.DevNull)
	assert.Equal(t, 0, code, errOut)
	fi, err = os.Lstat(os.DevNull)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeCharDevice, "/dev/null is still the device")

	if _, err := os.Stat("/dev/full"); err == nil {
		ran := runsLoad(t, 1, nil)
		code, _, errOut = run(t, "load", "-file", "/dev/full")
		assert.Equal(t, 1, code)
		assert.False(t, *ran)
		assert.Contains(t, errOut, "-file: write /dev/full: no space left on device")
	}
}

// failWriter refuses every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestLoadStdoutError: a standard output that refuses writes (a
// redirection to a full disk) fails the command at the end, named.
func TestLoadStdoutError(t *testing.T) {
	t.Chdir(t.TempDir())
	runsLoad(t, 1, nil)
	var errb strings.Builder
	code := Main(context.Background(), []string{"load", "-file", ""}, nil, failWriter{}, &errb)
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "standard output: ")
	assert.Contains(t, errb.String(), "no space left on device")
}

// TestLoadReadOnlyDir: without root, a directory the user may not write
// fails -file and -o before any run (as root, permissions do not stop a
// write: TestLoadReadOnly mounts a read-only filesystem instead).
func TestLoadReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes in any directory")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	for _, args := range [][]string{
		{"-file", filepath.Join(dir, "volano-mark.log")},
		{"-file", "", "-o", filepath.Join(dir, "run.json")},
	} {
		ran := runsLoad(t, 1, nil)
		code, _, errOut := run(t, append([]string{"load"}, args...)...)
		assert.Equal(t, 1, code, "%v: %s", args, errOut)
		assert.False(t, *ran)
		assert.Contains(t, errOut, "permission denied")
	}
}

// TestLogFileWriteError: a write error during the run (injected) is kept,
// the later writes are dropped, and close removes the temporary file,
// leaves the old log and names the log in the error.
func TestLogFileWriteError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "volano-mark.log")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	l, err := openLogFile(path, func(w io.Writer) { _, _ = io.WriteString(w, "head\n") })
	require.NoError(t, err)
	n, err := l.Write([]byte("line\n"))
	assert.Equal(t, 5, n)
	assert.NoError(t, err)
	l.err = &fs.PathError{Op: "write", Path: l.tmp, Err: syscall.EIO}
	n, err = l.Write([]byte("more\n"))
	assert.Equal(t, 5, n, "the text beside it goes on")
	assert.NoError(t, err)
	err = l.close()
	require.Error(t, err)
	assert.Equal(t, "-file: write "+path+": input/output error", err.Error())
	assert.ErrorIs(t, err, syscall.EIO)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(data))
	assert.Equal(t, []string{"volano-mark.log"}, names(t, dir))
	assert.NoError(t, l.close(), "closed once")
}
