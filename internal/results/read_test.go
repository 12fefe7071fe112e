package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func encoded(t testing.TB, d *Document) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, d))
	return buf.Bytes()
}

// edited returns the full document's JSON with f applied to its generic form.
func edited(t *testing.T, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(encoded(t, fullDocument(t)), &m))
	f(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func TestReadErrors(t *testing.T) {
	valid := string(encoded(t, fullDocument(t)))
	for _, tc := range []struct {
		name, in string
		kind     error
		reason   string
	}{
		{"empty", "", ErrTruncated, "empty"},
		{"blank", " \n\t", ErrTruncated, "empty"},
		{"truncated", valid[:len(valid)/2], ErrTruncated, "unexpected end"},
		{"truncated after brace", "{", ErrTruncated, "unexpected end"},
		{"truncated in string", `{"schema": 1, "run_id": "ab`, ErrTruncated, "unexpected end"},
		{"garbage", "\x00\x01binary garbage", ErrNotDocument, "not JSON"},
		{"text", "hello world\n", ErrNotDocument, "not JSON"},
		{"array", "[1, 2, 3]", ErrNotDocument, "not an object"},
		{"null", "null", ErrNotDocument, "not an object"},
		{"number", "42", ErrNotDocument, "not an object"},
		{"no schema", `{"run_id": "x"}`, ErrNotDocument, `no "schema"`},
		{"other JSON", `{"name": "package.json", "version": "1.0.0"}`, ErrNotDocument, `no "schema"`},
		{"schema string", `{"schema": "1"}`, ErrNotDocument, "not a version number"},
		{"schema float", `{"schema": 1.5}`, ErrNotDocument, "not a version number"},
		{"two values", valid + valid, ErrNotDocument, "more than one"},
		{"trailing", valid + "]", ErrNotDocument, "after the JSON object"},
		{"future schema", `{"schema": 2, "run_id": "x", "something": "new"}`, ErrUnknownSchema, "schema 2"},
		{"zero schema", `{"schema": 0, "run_id": "x"}`, ErrUnknownSchema, "schema 0"},
		{"negative schema", `{"schema": -1}`, ErrUnknownSchema, "schema -1"},
		{"wrong type", edited(t, func(m map[string]any) { m["counts"] = "many" }), ErrNotDocument, `"counts"`},
		{"no run id", `{"schema": 1}`, ErrInvalid, "run_id"},
		{"negative count", edited(t, func(m map[string]any) { m["counts"].(map[string]any)["sent"] = -5 }), ErrInvalid, "counts.sent is negative"},
		{"negative tcp counter", edited(t, func(m map[string]any) { m["tcp"] = map[string]any{"retransmitted": -1} }), ErrInvalid, "tcp.retransmitted is negative"},
		{"bad total", edited(t, func(m map[string]any) { m["counts"].(map[string]any)["total"] = 1 }), ErrInvalid, "counts.total"},
		{"bad histogram", edited(t, func(m map[string]any) {
			m["latency"].(map[string]any)["delivery"].(map[string]any)["hdr"] = "bm90IGhkcg=="
		}), ErrInvalid, `latency "delivery"`},
		{"histogram count", edited(t, func(m map[string]any) {
			m["latency"].(map[string]any)["turn"].(map[string]any)["count"] = 7
		}), ErrInvalid, "count 7 but"},
		{"null histogram", edited(t, func(m map[string]any) { m["latency"].(map[string]any)["x"] = nil }), ErrInvalid, "null histogram"},
		{"timeline lengths", edited(t, func(m map[string]any) { m["timeline"].(map[string]any)["sent"] = []int{1} }), ErrInvalid, "timeline"},
		{"timeline interval", edited(t, func(m map[string]any) { m["timeline"].(map[string]any)["interval_seconds"] = 0 }), ErrInvalid, "interval_seconds"},
		{"shard index", edited(t, func(m map[string]any) { m["shard"].(map[string]any)["index"] = 3 }), ErrInvalid, "shard 3 of 3"},
		{"failure kind", edited(t, func(m map[string]any) { m["failures"] = []any{map[string]any{"count": 1}} }), ErrInvalid, "no kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), "results/run.json")
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.kind)
			assert.True(t, strings.HasPrefix(err.Error(), "results/run.json: "), err.Error())
			assert.Contains(t, err.Error(), tc.reason)
			var re *ReadError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "results/run.json", re.Name)
			for _, other := range []error{ErrTruncated, ErrNotDocument, ErrUnknownSchema} {
				if other != tc.kind && !(tc.kind == ErrInvalid && other == ErrNotDocument) {
					assert.NotErrorIs(t, err, other)
				}
			}
		})
	}
	assert.ErrorIs(t, ErrInvalid, ErrNotDocument)
}

func TestReadIgnoresUnknownFields(t *testing.T) {
	in := edited(t, func(m map[string]any) {
		m["added_in_a_later_build"] = map[string]any{"x": 1}
		m["counts"].(map[string]any)["new_count"] = 3
	})
	d, err := Read(strings.NewReader(in), "x")
	require.NoError(t, err)
	assert.Equal(t, int64(2000000), d.Counts.Total)
}

func TestReadTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte(" "), MaxDocumentBytes+1)
	_, err := Read(bytes.NewReader(big), "big.json")
	assert.ErrorIs(t, err, ErrNotDocument)
	assert.Contains(t, err.Error(), "larger than")
}

func TestReadIOError(t *testing.T) {
	_, err := Read(iotestErrReader{}, "pipe")
	require.Error(t, err)
	assert.Equal(t, "pipe: boom", err.Error())
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestReadFileAndPaths(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	require.NoError(t, os.Mkdir(runs, 0o755))
	mk := func(path, id string) {
		d := fullDocument(t)
		d.RunID = id
		require.NoError(t, WriteFile(path, d))
	}
	mk(filepath.Join(runs, "b.json"), "b")
	mk(filepath.Join(runs, "a.json"), "a")
	mk(filepath.Join(runs, "c.JSON"), "c")
	require.NoError(t, os.WriteFile(filepath.Join(runs, "notes.txt"), []byte("not json"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(runs, "sub.json"), 0o755)) // a directory: skipped
	mk(filepath.Join(runs, "sub.json", "deep.json"), "deep")
	require.NoError(t, os.WriteFile(filepath.Join(runs, "d-truncated.json"), []byte(`{"schema": 1, "run_`), 0o644))
	single := filepath.Join(dir, "single.json")
	mk(single, "single")
	missing := filepath.Join(dir, "missing.json")
	stdin := bytes.NewReader(encoded(t, fullDocument(t)))

	docs, errs := ReadPaths([]string{single, runs, missing, "-"}, stdin)
	var ids, sources []string
	for _, d := range docs {
		ids = append(ids, d.RunID)
		sources = append(sources, d.Source)
	}
	assert.Equal(t, []string{"single", "a", "b", "c", "0123456789abcdef"}, ids)
	assert.Equal(t, []string{single, filepath.Join(runs, "a.json"), filepath.Join(runs, "b.json"), filepath.Join(runs, "c.JSON"), "-"}, sources)
	require.Len(t, errs, 2)
	assert.ErrorIs(t, errs[0], ErrTruncated)
	assert.Contains(t, errs[0].Error(), filepath.Join(runs, "d-truncated.json")+": ")
	assert.ErrorIs(t, errs[1], os.ErrNotExist)
	assert.Equal(t, missing+": no such file or directory", errs[1].Error())

	docs, errs = ReadPaths([]string{"-"}, nil)
	assert.Empty(t, docs)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "-: ")

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	docs, errs = ReadPaths([]string{empty}, nil)
	assert.Empty(t, docs)
	assert.Empty(t, errs)

	_, err := ReadFile(missing)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = ReadFile(runs)
	assert.Error(t, err) // a directory is not a document
}
