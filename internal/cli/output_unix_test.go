//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nonRegular makes a symbolic link to a file and a FIFO in a new
// directory and returns them with the link's target.
func nonRegular(t *testing.T) (link, fifo, target string) {
	t.Helper()
	dir := t.TempDir()
	target = filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("keep"), 0o644))
	link = filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	fifo = filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	return link, fifo, target
}

// TestReportOutputNeverReplacesNonRegular: report -o pointed at a symbolic
// link, a FIFO or a device is refused before anything is read, naming it.
// Before, the rename replaced the link (as root, /dev/stdout).
func TestReportOutputNeverReplacesNonRegular(t *testing.T) {
	link, fifo, target := nonRegular(t)
	for _, c := range []struct{ path, kind string }{
		{link, "symbolic link"}, {fifo, "FIFO"}, {"/dev/null", "character device"}, {t.TempDir(), "directory"},
	} {
		code, out, errOut := run(t, "report", "-o", c.path, fixture("cpus"))
		assert.Equal(t, 2, code, c.path)
		assert.Empty(t, out)
		assert.Contains(t, errOut, c.path)
		assert.Contains(t, errOut, c.kind)
		fi, err := os.Lstat(c.path)
		require.NoError(t, err)
		assert.False(t, fi.Mode().IsRegular(), "%s is still what it was", c.path)
	}
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
}

// TestLoadOutputNeverReplacesNonRegular: so does load, before any run.
func TestLoadOutputNeverReplacesNonRegular(t *testing.T) {
	link, fifo, target := nonRegular(t)
	for _, args := range [][]string{{"-o", link}, {"-o", fifo}, {"-o", "/dev/null"}, {"--json", "-o", fifo}} {
		p := args[len(args)-1]
		ran := false
		got := fakeLoad(t, nil)
		code, _, errOut := run(t, append([]string{"load"}, args...)...)
		ran = got.Steps != nil
		assert.Equal(t, 2, code, p)
		assert.False(t, ran, "no run starts")
		assert.Contains(t, errOut, p)
		assert.Contains(t, errOut, "not a regular file")
	}
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))

	// A link to a directory is a directory: documents go inside it.
	dir := t.TempDir()
	linkDir := filepath.Join(t.TempDir(), "results")
	require.NoError(t, os.Symlink(dir, linkDir))
	require.NoError(t, checkOutputPath(linkDir))
}
