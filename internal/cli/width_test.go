package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpFits80Columns: every line of every command's --help (the usage,
// the long description, the examples and the wrapped flags) is at most 80
// characters wide, the width of a terminal that nobody resized.
func TestHelpFits80Columns(t *testing.T) {
	var walk func(c *cobra.Command) []string
	walk = func(c *cobra.Command) []string {
		paths := []string{c.CommandPath()}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				paths = append(paths, walk(sub)...)
			}
		}
		return paths
	}
	paths := walk(NewRoot(&IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	require.Greater(t, len(paths), 5)
	for _, p := range paths {
		args := append(strings.Fields(p)[1:], "--help")
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
		require.Equal(t, 0, code, "%v: %s", args, errb.String())
		require.NotEmpty(t, out.String(), p)
		for i, line := range strings.Split(out.String(), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), helpWidth, "%s --help, line %d: %q", p, i+1, line)
		}
	}
}

// TestUnknownFlagSuggestions: a misspelt flag is a usage error (exit 2)
// that names the flags it may have meant, in Mark's one-dash spelling too.
func TestUnknownFlagSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "--romes", "5"}, "--romes: illegal argument (unknown option) (did you mean --rooms?)"},
		{[]string{"load", "-romes", "5"}, "-romes: illegal argument (unknown option) (did you mean --rooms?)"},
		{[]string{"report", "--formt", "html"}, "(did you mean --format?)"},
		{[]string{"serve", "--max-conections", "5"}, "(did you mean --max-connections?)"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, errb.String(), tc.want, "%v", tc.args)
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"load", "--zzzzzzzz"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.NotContains(t, errb.String(), "did you mean", "nothing near: no suggestion")
}

// TestLoadFits80Columns: what load prints by default for a run on its own
// server (each run's lines, the summary under the run rule) is at most 80
// characters a line; -v prints the full lines.
func TestLoadFits80Columns(t *testing.T) {
	t.Setenv("VOLANOGO_TEST_MAIN", "1") // --serve starts this test binary as volanogo
	code, out, errOut := run(t, "load", "--serve", "-runs", "2", "-rooms", "2", "-users", "3", "-count", "5", "-file", "")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "Summary\n")
	require.Contains(t, out, "Server CPU         = ")
	for i, line := range strings.Split(out+errOut, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "load, line %d: %q", i+1, line)
	}
	assert.Contains(t, out, "Delivery latency   = p50 ", "the main figures stay")
	assert.NotContains(t, out, ", p90 ", "the p90 is -v's")
}

// TestReportFits80Columns: report's default text over the repository's
// report fixtures (every directory of valid documents, and a comparison)
// is at most 80 characters a line.
func TestReportFits80Columns(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "report", "*"))
	require.NoError(t, err)
	var good []string
	for _, d := range dirs {
		if base := filepath.Base(d); base != "bad" && base != "golden" {
			good = append(good, d)
		}
	}
	require.GreaterOrEqual(t, len(good), 5)
	for _, args := range [][]string{
		append([]string{"report"}, good...),
		append([]string{"report", "--compare", "go1.26-linux", "java17-volano"}, good...),
		{"report", filepath.Join("..", "..", "testdata", "report", "scale")},
	} {
		code, out, errOut := run(t, args...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "VOLANOGO REPORT")
		for i, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%v, line %d: %q", args[1:2], i+1, line)
		}
	}
}
