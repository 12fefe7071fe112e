//go:build unix

package results

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteAtomicRefusesNonRegular: -o never replaces what is not a
// regular file. Before, a rename replaced a symbolic link (as root,
// /dev/stdout) with the file.
func TestWriteAtomicRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))

	for _, c := range []struct{ path, kind string }{
		{link, "a symbolic link"}, {fifo, "a FIFO"}, {sub, "a directory"}, {"/dev/null", "a character device"},
	} {
		if _, err := os.Lstat(c.path); err != nil {
			continue
		}
		before, err := os.Lstat(c.path)
		require.NoError(t, err)
		err = WriteAtomic(c.path, []byte("new"))
		require.Error(t, err, c.path)
		assert.True(t, errors.Is(err, ErrNotRegular), c.path)
		assert.Contains(t, err.Error(), c.path)
		assert.Contains(t, err.Error(), c.kind)
		after, err := os.Lstat(c.path)
		require.NoError(t, err)
		assert.Equal(t, before.Mode(), after.Mode(), "%s is untouched", c.path)
		assert.Error(t, WriteFile(c.path, fullDocument(t)), c.path)
	}
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "old", string(data), "the link's target is untouched")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 4, "no temporary file is left")

	// A regular file is replaced; a new one is made.
	require.NoError(t, WriteAtomic(target, []byte("new")))
	require.NoError(t, WriteAtomic(filepath.Join(dir, "fresh.json"), []byte("x")))
	fi, err := os.Lstat(target)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	assert.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())
}
