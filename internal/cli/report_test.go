package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

const reportData = "../../testdata/report"

func fixture(dir string) string { return filepath.Join(reportData, dir) }

func runIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestReportExitCodes(t *testing.T) {
	t.Run("0: all documents read", func(t *testing.T) {
		code, out, errOut := run(t, "report", fixture("scale"), fixture("shards"))
		assert.Equal(t, 0, code, errOut)
		assert.Empty(t, errOut)
		assert.Contains(t, out, "Is it fast? (900 connections)")
		assert.Contains(t, out, "Does it scale?")
		assert.Contains(t, out, "1,490b")
		assert.Contains(t, out, "109,911") // 2,100 connections, with the merged shards
	})
	t.Run("1: bad files named and skipped, the rest reported", func(t *testing.T) {
		code, out, errOut := run(t, "report", fixture("cpus"), fixture("bad"))
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "Is it fast?")
		for _, want := range []string{"not-a-document.json: not a result document", "truncated.json: truncated",
			"unknown-schema.json: unknown schema", "3 input(s) skipped"} {
			assert.Contains(t, errOut, want)
		}
	})
	t.Run("2: no document at all", func(t *testing.T) {
		code, out, errOut := run(t, "report", t.TempDir())
		assert.Equal(t, 2, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "no result documents")
	})
	t.Run("2: only bad documents", func(t *testing.T) {
		code, out, errOut := run(t, "report", fixture("bad"))
		assert.Equal(t, 2, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "truncated.json")
		assert.Contains(t, errOut, "no result documents")
	})
	t.Run("2: documents only in subdirectories", func(t *testing.T) {
		code, _, errOut := run(t, "report", reportData)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "name the subdirectories too")
		assert.Contains(t, errOut, filepath.Join(reportData, "bad"))
	})
	t.Run("2: missing file", func(t *testing.T) {
		code, _, errOut := run(t, "report", filepath.Join(t.TempDir(), "nope.json"))
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "nope.json")
	})
	t.Run("2: bad flags", func(t *testing.T) {
		dir := fixture("cpus")
		for _, args := range [][]string{
			{"report", "--format", "pdf", dir},
			{"report", "--by", "colour", dir},
			{"report", "--best", "3", "--of", "2", dir},
			{"report", "--best", "0", dir},
			{"report", "--discard", "-1", dir},
			{"report", dir, "--compare", "go1.26-linux"},
			{"report", "--compare", "a,b,c", dir},
			{"report", "--compare", "go1.26-linux", "nosuch", dir},
		} {
			code, _, errOut := run(t, args...)
			assert.Equal(t, 2, code, "%v: %s", args, errOut)
		}
	})
}

func TestReportShortRunsAndChurn(t *testing.T) {
	code, out, errOut := run(t, "report", fixture("short"), fixture("churn"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "go1.26-quick  ----a  ----a  121,860  109,730  ≥ 2,100")
	assert.Contains(t, out, "a. Ran under 1 second: no score (raise -count).")
	assert.Contains(t, out, "\nChurn\n=====\n")
	assert.Contains(t, out, "java17-volano: left behind 3 conns, 3 FDs at 1,000 users")
}

func TestReportCompareSpellings(t *testing.T) {
	const a, b = "go1.26-linux (1 CPU)", "go1.26-linux (2 CPUs)"
	dir := fixture("cpus")
	var outs []string
	for _, args := range [][]string{
		{"report", "--by", "cpus", "--compare", a, b, dir},
		{"report", "--by", "cpus", dir, "--compare", a, b},
		{"report", "--by", "cpus", "--compare", a + "," + b, dir},
		{"report", "--by", "cpus", "--compare", a, "--compare", b, dir},
		{"report", "-by", "cpus", "-compare", a, b, dir},
	} {
		code, out, errOut := run(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.Contains(t, out, "Compare: "+a+" vs "+b)
		outs = append(outs, out)
	}
	for _, o := range outs[1:] {
		assert.Equal(t, outs[0], o)
	}
}

func TestReportStdinAndFormats(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(fixture("cpus"), "volanogo-go1.26-linux-r50-run2-17425bdb.json"))
	require.NoError(t, err)
	code, out, errOut := runIn(t, string(doc), "report", "--discard", "0", "--best", "1", "--of", "1", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "No run is discarded")
	assert.Contains(t, out, "1,000 connections")

	for format, want := range map[string]string{
		"markdown": "## Is it fast?", "json": `"platforms": [`, "csv": "table,platform,step,metric,value",
		"html": "<!DOCTYPE html>", "text": "VOLANOGO REPORT",
	} {
		code, out, errOut := run(t, "report", "--format", format, fixture("cpus"))
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, want, format)
	}
}

func TestReportOutputFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	code, out, errOut := run(t, "report", "-o", path, fixture("cpus"))
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("<!DOCTYPE html>")), "format from the extension")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")

	// --format wins over the extension.
	code, _, errOut = run(t, "report", "--format", "csv", "-o", path, fixture("cpus"))
	require.Equal(t, 0, code, errOut)
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("table,platform")))

	code, _, _ = run(t, "report", "-o", filepath.Join(dir, "no", "such", "dir.txt"), fixture("cpus"))
	assert.Equal(t, 1, code)
}

// TestReportFormatFromExtension: without --format, the extension of -o
// chooses the format; any other extension is text, and --format wins.
func TestReportFormatFromExtension(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, format, prefix string
	}{
		{"r.html", "", "<!DOCTYPE html>"},
		{"r.htm", "", "<!DOCTYPE html>"},
		{"R.HTML", "", "<!DOCTYPE html>"},
		{"r.md", "", "# Volanogo report"},
		{"r.markdown", "", "# Volanogo report"},
		{"r.json", "", "{"},
		{"r.csv", "", "table,platform,step,metric,value"},
		{"r.txt", "", "VOLANOGO REPORT"},
		{"report", "", "VOLANOGO REPORT"},
		{"r.pdf", "", "VOLANOGO REPORT"},
		{"r.html", "text", "VOLANOGO REPORT"},
		{"r.txt", "md", "# Volanogo report"},
		{"r.csv", "json", "{"},
	} {
		path := filepath.Join(dir, c.name)
		args := []string{"report", "-o", path, fixture("cpus")}
		if c.format != "" {
			args = append(args, "--format", c.format)
		}
		code, out, errOut := run(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.Empty(t, out)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(data), c.prefix), "%v: %.40q", args, data)
		require.NoError(t, os.Remove(path))
	}
	// Standard output, "-o -" too, is text unless --format says otherwise.
	for _, args := range [][]string{{"report", fixture("cpus")}, {"report", "-o", "-", fixture("cpus")}} {
		code, out, errOut := run(t, args...)
		require.Equal(t, 0, code, errOut)
		assert.True(t, strings.HasPrefix(out, "VOLANOGO REPORT"), "%v", args)
	}
}

func TestReportDefaultIsCurrentDirectory(t *testing.T) {
	abs, err := filepath.Abs(fixture("cpus"))
	require.NoError(t, err)
	t.Chdir(abs)
	code, out, errOut := run(t, "report")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Processor scalability")
}

func TestReportHelp(t *testing.T) {
	code, out, _ := run(t, "report", "--help")
	assert.Equal(t, 0, code)
	for _, want := range []string{"--compare", "--discard", "--best", "--of", "--by", "--format", "-o, --output",
		"(default 1)", "(default 2)", "(default 3)", `(default "label")`, `(default "text")`, "Examples:",
		"the extension of FILE chooses", "--format always wins"} {
		assert.Contains(t, out, want)
	}
}

// TestReportOutputDash: -o - is standard output, and a file is written
// whole (atomically).
func TestReportOutputDash(t *testing.T) {
	code, out, errOut := run(t, "report", "-o", "-", fixture("cpus"))
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Is it fast?")

	path := filepath.Join(t.TempDir(), "r.md")
	code, out, errOut = run(t, "report", "-o", path, fixture("cpus"))
	assert.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "# Volanogo report"))
}

// runSet writes n runs of one platform to a new directory, the score of
// run k being score × (1 + k/1000), from a fixture document.
func runSet(t *testing.T, label string, n int, score int64) string {
	t.Helper()
	base, err := results.ReadFile(filepath.Join(fixture("cpus"), "volanogo-go1.26-linux-r50-run2-17425bdb.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	for k := 1; k <= n; k++ {
		d := *base
		d.Label, d.Run, d.Discarded = label, k, k == 1
		d.RunID = fmt.Sprintf("%s-%d", label, k)
		d.Score = score + score*int64(k)/1000
		d.Config.ServerCPUs = 0
		require.NoError(t, results.WriteFile(filepath.Join(dir, results.FileName(&d)), &d))
	}
	return dir
}

// TestReportCompareGate: --compare OLD NEW --threshold exits 3 when NEW is
// significantly worse past the threshold, 0 when not, and says when the
// runs are too few for the gate to fail.
func TestReportCompareGate(t *testing.T) {
	old := runSet(t, "old", 5, 130000)
	same := runSet(t, "same", 5, 129000)
	worse := runSet(t, "worse", 5, 118000)

	code, out, errOut := run(t, "report", "--compare", old, worse, "--threshold", "5%")
	out = strings.Join(strings.Fields(out), " ") // the text wraps at 100 columns
	assert.Equal(t, 3, code, errOut)
	assert.Contains(t, out, "Verdict: B is significantly worse than A by more than 5% in 1 metric: score at 1,000 connections (−9.23%, p=0.029).")
	assert.Contains(t, errOut, "significantly worse than "+old+" by more than 5% in 1 metric(s)")

	code, out, errOut = run(t, "report", "--compare", old, worse, "--threshold", "10")
	out = strings.Join(strings.Fields(out), " ")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Verdict: no metric of B is significantly worse than A by more than 10%.")

	code, _, errOut = run(t, "report", "--compare", old, same, "--threshold", "0%")
	assert.Equal(t, 3, code, "1%% worse and significant: any regression fails a 0%% gate: %s", errOut)

	code, out, _ = run(t, "report", "--compare", worse, old, "--threshold", "5%")
	assert.Equal(t, 0, code, "better is no regression")
	assert.Contains(t, out, "Verdict: no metric")

	// Without --threshold, no gate.
	code, _, errOut = run(t, "report", "--compare", old, worse)
	assert.Equal(t, 0, code, errOut)

	// Four runs each, the first discarded: three counted, nothing can be
	// significant, and the report says so.
	few, fewer := runSet(t, "few", 4, 130000), runSet(t, "fewer", 4, 100000)
	code, out, errOut = run(t, "report", "--compare", few, fewer, "--threshold", "5%")
	out = strings.Join(strings.Fields(out), " ")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Too few runs for significance: with 3 runs of A and 3 of B the smallest possible p-value is 0.100")
	assert.Contains(t, out, "Verdict: none possible")
	assert.Contains(t, errOut, "the gate cannot fail")
}

// TestReportCompareOperands: OLD and NEW are two labels or two paths; a
// mix, or paths beside other arguments, is refused with a clear error.
func TestReportCompareOperands(t *testing.T) {
	dir := fixture("scale")
	code, out, errOut := run(t, "report", "--compare", "go1.26-linux", "java17-volano", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Compare: go1.26-linux vs java17-volano")

	code, _, errOut = run(t, "report", "--compare", "go1.26-linux", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `"`+dir+`" is a file or directory but "go1.26-linux" is not`)
	assert.Contains(t, errOut, "Run 'volanogo report --help' for usage.")

	code, _, errOut = run(t, "report", "--compare", dir, fixture("cpus"), fixture("paced"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "is a file or directory: to compare two sets of runs, give OLD and NEW as paths and no other argument")

	code, out, errOut = run(t, "report", "--compare", fixture("cpus"), dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Compare: "+fixture("cpus")+" vs "+dir)

	for _, args := range [][]string{
		{"report", "--threshold", "5%", dir},
		{"report", "--compare", "a", "b", "--threshold", "much", dir},
		{"report", "--compare", "a", "b", "--threshold", "-1", dir},
		{"report", "--by", "cpus", "--compare", fixture("cpus"), dir},
	} {
		code, _, errOut := run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}
