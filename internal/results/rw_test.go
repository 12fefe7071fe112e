package results

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

func TestWriteFillsSchemaAndValidates(t *testing.T) {
	d := fullDocument(t)
	d.Schema = 0
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, d))
	assert.Equal(t, 0, d.Schema, "Write must not modify its document")
	got, err := Read(&buf, "x")
	require.NoError(t, err)
	assert.Equal(t, SchemaVersion, got.Schema)

	d.RunID = ""
	buf.Reset()
	err = Write(&buf, d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run_id")
	assert.Zero(t, buf.Len())

	err = Write(&buf, nil)
	assert.Error(t, err)
}

func TestWriteFileErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	d := fullDocument(t)
	d.Counts.Sent = -1
	path := filepath.Join(dir, "bad.json")
	require.Error(t, WriteFile(path, d))
	// A directory in the way of the rename: the temporary file is removed.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "taken.json"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "taken.json", "x"), nil, 0o644))
	require.Error(t, WriteFile(filepath.Join(dir, "taken.json"), fullDocument(t)))
	// A directory that does not exist.
	require.Error(t, WriteFile(filepath.Join(dir, "missing", "x.json"), fullDocument(t)))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "taken.json", entries[0].Name())
}

func TestWriteFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	require.NoError(t, WriteFile(path, fullDocument(t)))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("{\n  \"schema\": 1,\n  \"run_id\":")), "indented, schema first")
	assert.True(t, bytes.HasSuffix(data, []byte("}\n")))
}

func TestOutputPath(t *testing.T) {
	dir := t.TempDir()
	d := fullDocument(t)
	d.Label = "Go 1.26 / linux (tuned)"
	assert.Equal(t, filepath.Join(dir, "volanogo-Go_1.26_linux_tuned-r15-run2-0123456789abcdef-shard1of3.json"), OutputPath(dir, d))
	assert.Equal(t, "sub/volanogo-Go_1.26_linux_tuned-r15-run2-0123456789abcdef-shard1of3.json", OutputPath("sub/", d))
	assert.Equal(t, filepath.Join(dir, "x.json"), OutputPath(filepath.Join(dir, "x.json"), d))
	assert.Equal(t, "volanogo-Go_1.26_linux_tuned-r15-run2-0123456789abcdef-shard1of3.json", OutputPath("", d))

	for _, tc := range []struct {
		name string
		edit func(*Document)
		want string
	}{
		{"no shard", func(d *Document) { d.Shard = nil }, "volanogo-a-r15-run2-0123456789abcdef.json"},
		{"no run", func(d *Document) { d.Shard, d.Run = nil, 0 }, "volanogo-a-r15-0123456789abcdef.json"},
		{"no step", func(d *Document) { d.Shard, d.Step, d.Config.Rooms = nil, 0, 7 }, "volanogo-a-r7-run2-0123456789abcdef.json"},
		{"no label", func(d *Document) { d.Shard, d.Label = nil, "" }, "volanogo-r15-run2-0123456789abcdef.json"},
		{"path tricks", func(d *Document) { d.Shard, d.Label, d.RunID = nil, "../../etc/passwd", "../x" }, "volanogo-etc_passwd-r15-run2-x.json"},
		{"short id", func(d *Document) { d.Shard, d.RunID = nil, "ab" }, "volanogo-a-r15-run2-ab.json"},
		{"epoch ids differ", func(d *Document) { d.Shard, d.RunID = nil, "1795296164" }, "volanogo-a-r15-run2-1795296164.json"},
		{"long id", func(d *Document) { d.Shard, d.RunID = nil, strings.Repeat("f", 40) }, "volanogo-a-r15-run2-" + strings.Repeat("f", 32) + ".json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fullDocument(t)
			d.Label = "a"
			tc.edit(d)
			assert.Equal(t, tc.want, FileName(d))
		})
	}
	assert.Equal(t, "volanogo.json", FileName(nil))
	long := fullDocument(t)
	long.Label = strings.Repeat("x", 300)
	assert.LessOrEqual(t, len(FileName(long)), 100)
}
