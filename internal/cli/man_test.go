package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManWritesPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	code, out, errOut := run(t, "man", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, dir)

	root, err := os.ReadFile(filepath.Join(dir, "volanogo.1"))
	require.NoError(t, err)
	assert.Contains(t, string(root), `.TH "VOLANOGO" "1"`)
	assert.Contains(t, string(root), "volanogo-version(1)", "the root page lists the version command under SEE ALSO")

	version, err := os.ReadFile(filepath.Join(dir, "volanogo-version.1"))
	require.NoError(t, err)
	assert.Contains(t, string(version), "volanogo-version - Print the version")
	assert.Contains(t, string(version), "volanogo version [flags]")

	// The man command itself is hidden: no page for it.
	assert.NoFileExists(t, filepath.Join(dir, "volanogo-man.1"))
}

func TestManNeedsDir(t *testing.T) {
	code, _, errOut := run(t, "man")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "accepts 1 arg")
}

func TestManIsHidden(t *testing.T) {
	code, out, _ := run(t, "--help")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "man DIR")
}

func TestCompletionBash(t *testing.T) {
	code, out, errOut := run(t, "completion", "bash")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "bash completion")
	assert.Contains(t, out, "volanogo")
}

func TestCompletionShells(t *testing.T) {
	for _, shell := range []string{"zsh", "fish", "powershell"} {
		code, out, errOut := run(t, "completion", shell)
		require.Equal(t, 0, code, "%s: %s", shell, errOut)
		assert.NotEmpty(t, out, shell)
	}
}
