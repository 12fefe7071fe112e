package cli

import (
	"bytes"
	"context"
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
