package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/report/golden")

// goodDirs are the fixture directories of valid documents.
var goodDirs = []string{"scale", "shards", "cpus", "paced", "short", "churn", "integrity", "storm"}

// fixtureCache keeps the documents read by readFixtures: reading validates
// every histogram, which is slow under the race detector. Build does not
// modify its input, so tests share them.
var fixtureCache = map[string][]*results.Document{}

func readFixtures(t *testing.T, dirs ...string) []*results.Document {
	t.Helper()
	key := strings.Join(dirs, "\x00")
	if docs, ok := fixtureCache[key]; ok {
		return slices.Clone(docs)
	}
	var paths []string
	for _, d := range dirs {
		paths = append(paths, filepath.Join(fixtures, d))
	}
	docs, errs := results.ReadPaths(paths, nil)
	require.Empty(t, errs)
	require.NotEmpty(t, docs)
	fixtureCache[key] = docs
	return slices.Clone(docs)
}

// golden compares got with testdata/report/golden/name; with -update it
// rewrites the file, and on a mismatch it writes name.got beside it and
// shows a diff, as benchstat's tests do.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(fixtures, "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	gotPath := path + ".got"
	if bytes.Equal(want, got) {
		os.Remove(gotPath)
		return
	}
	require.NoError(t, os.WriteFile(gotPath, got, 0o644))
	diff, _ := exec.Command("diff", "-u", path, gotPath).CombinedOutput()
	t.Errorf("%s differs from the golden file (got in %s):\n%s", name, gotPath, diff)
}

func render(t *testing.T, r *Report, format string) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.Render(&b, format))
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	docs := readFixtures(t, goodDirs...)
	cases := []struct {
		name    string
		opt     Options
		formats []string
	}{
		{"report", DefaultOptions(), []string{"text", "markdown", "json", "csv", "html"}},
		{"compare", func() Options {
			o := DefaultOptions()
			o.Compare = [2]string{"go1.26-linux", "java17-volano"}
			th := 5.0
			o.Threshold = &th
			return o
		}(), []string{"text", "markdown", "csv", "html"}},
		{"by-cpus", func() Options { o := DefaultOptions(); o.By = ByCPUs; return o }(), []string{"text"}},
		{"step-300-best-1-of-3", Options{Discard: 1, Best: 1, Of: 3, Step: 300}, []string{"text"}},
	}
	ext := map[string]string{"text": "txt", "markdown": "md", "json": "json", "csv": "csv", "html": "html"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Build(docs, c.opt)
			require.NoError(t, err)
			for _, f := range c.formats {
				golden(t, c.name+"."+ext[f], render(t, r, f))
			}
		})
	}
}

func TestTextFitsWidth(t *testing.T) {
	docs := readFixtures(t, goodDirs...)
	for _, by := range []string{ByLabel, ByServer, ByCPUs} {
		o := DefaultOptions()
		o.By = by
		if by == ByLabel {
			o.Compare = [2]string{"go1.26-ws", "java17-volano"}
		}
		r, err := Build(docs, o)
		require.NoError(t, err)
		for i, line := range strings.Split(string(render(t, r, "text")), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), textWidth, "by %s, line %d: %q", by, i+1, line)
		}
	}
}

// TestOrderDoesNotMatter: the report, and so the score of every cell, is
// the same whatever the order of the input documents.
func TestOrderDoesNotMatter(t *testing.T) {
	docs := readFixtures(t, goodDirs...)
	opt := DefaultOptions()
	opt.Compare = [2]string{"go1.26-ws", "go1.26-linux"}
	base, err := Build(docs, opt)
	require.NoError(t, err)
	want := render(t, base, "json")
	rng := rand.New(rand.NewPCG(4, 2))
	for i := 0; i < 6; i++ {
		shuffled := append([]*results.Document(nil), docs...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		r, err := Build(shuffled, opt)
		require.NoError(t, err)
		got := render(t, r, "json")
		if !bytes.Equal(want, got) {
			t.Fatalf("shuffle %d changed the report", i)
		}
		// The scores themselves, cell by cell.
		for j, row := range r.Scale.Rows {
			for k, c := range row.Cells {
				assert.Equal(t, base.Scale.Rows[j].Cells[k].Score, c.Score)
			}
		}
	}
}

func TestHTMLSelfContained(t *testing.T) {
	r, err := Build(readFixtures(t, goodDirs...), DefaultOptions())
	require.NoError(t, err)
	html := string(render(t, r, "html"))
	for _, bad := range []string{`="http:`, `="https:`, "<script", "<link", "<img", "src=", "url(", "@import"} {
		assert.NotContains(t, html, bad)
	}
	assert.Equal(t, 5, strings.Count(html, "<svg"), "bar chart, scale chart, capacity chart, two latency charts")
	assert.Contains(t, html, "----e")
	assert.Contains(t, html, "1,490e")
	assert.Contains(t, html, `class="n noscore">----d<`, "runs under one second")
}

func TestJSONRoundTrips(t *testing.T) {
	r, err := Build(readFixtures(t, goodDirs...), DefaultOptions())
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(render(t, r, "json"), &back))
	assert.Equal(t, r.Fast.Rows[0].Cell.Score, back.Fast.Rows[0].Cell.Score)
	assert.Equal(t, r.Platforms, back.Platforms)
}
