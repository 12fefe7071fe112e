package results

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReadRoundTrip(t *testing.T) {
	d := fullDocument(t)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, d))
	got, err := Read(&buf, "doc.json")
	require.NoError(t, err)
	assert.Equal(t, "doc.json", got.Source)
	got.Source = ""
	assert.Equal(t, d, got)
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	d := fullDocument(t)
	path := filepath.Join(dir, "out.json")
	require.NoError(t, WriteFile(path, d))
	require.NoError(t, WriteFile(path, d)) // over an existing file
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "out.json", entries[0].Name())
	got, err := ReadFile(path)
	require.NoError(t, err)
	got.Source = ""
	assert.Equal(t, d, got)
}
