package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^volanogo \S+ .*go1\.\d+`, out)

	code, out2, _ := run(t, "--version")
	assert.Equal(t, 0, code)
	assert.Equal(t, out, out2)
}

func TestUnknownCommandIsUsage(t *testing.T) {
	code, _, errOut := run(t, "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown command")
	assert.Contains(t, errOut, "Usage:")
}

func TestBadFlagIsUsage(t *testing.T) {
	code, _, errOut := run(t, "version", "--nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--nope: illegal argument (unknown option)")
	code, _, errOut = run(t, "version", "-nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "-nope: illegal argument (unknown option)")
}

func TestNormalizeArgs(t *testing.T) {
	root := &cobra.Command{Use: "x"}
	sub := &cobra.Command{Use: "load", Run: func(*cobra.Command, []string) {}}
	sub.Flags().Int("rooms", 50, "")
	sub.Flags().StringP("output", "o", "", "")
	root.AddCommand(sub)
	got := normalizeArgs(root, []string{"load", "-rooms", "105", "-rooms=3", "--rooms", "4", "-o", "f", "-nope", "-ofile", "--", "-rooms"})
	assert.Equal(t, []string{"load", "--rooms", "105", "--rooms=3", "--rooms", "4", "-o", "f", "--nope", "-ofile", "--", "-rooms"}, got)
}
