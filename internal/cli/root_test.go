package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
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
	assert.Equal(t, "volanogo: unknown command \"frobnicate\"\nRun 'volanogo --help' for usage.\n", errOut,
		"one line, one hint, no doubled prefix")

	code, _, errOut = run(t, "lod")
	assert.Equal(t, 2, code)
	assert.Equal(t, "volanogo: unknown command \"lod\" (did you mean load?)\nRun 'volanogo --help' for usage.\n", errOut)
}

// TestUsageErrorIsOneLine: a bad command line prints the error and a hint,
// not the 60-odd lines of the command's usage.
func TestUsageErrorIsOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--nope"},
		{"load", "-rooms", "abc"},
		{"load", "extra"},
		{"report", "--format", "pdf"},
		{"serve", "--log-level", "loud"},
		{"version", "extra"},
	} {
		code, out, errOut := run(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, out, "%v", args)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if assert.Len(t, lines, 2, "%v: %q", args, errOut) {
			assert.True(t, strings.HasPrefix(lines[0], "volanogo "+args[0]+": "), "%v: %q", args, lines[0])
			assert.NotContains(t, lines[0], "volanogo volanogo")
			assert.Equal(t, "Run 'volanogo "+args[0]+" --help' for usage.", lines[1])
		}
	}
}

// TestInterruptExits130: any command that fails once its context is
// cancelled (SIGINT or SIGTERM in main) exits 130, as shells expect.
func TestInterruptExits130(t *testing.T) {
	var errb bytes.Buffer
	root := NewRoot(&IO{Out: &errb, Err: &errb})
	started := make(chan struct{})
	root.AddCommand(&cobra.Command{Use: "wait", RunE: func(cmd *cobra.Command, _ []string) error {
		close(started)
		<-cmd.Context().Done()
		return cmd.Context().Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	assert.Equal(t, 130, execute(ctx, root, []string{"wait"}, &errb))
	assert.Equal(t, "volanogo wait: interrupted\n", errb.String())

	// A command that maps the interruption to 130 itself (load) says
	// nothing more.
	errb.Reset()
	root = NewRoot(&IO{Out: &errb, Err: &errb})
	root.AddCommand(&cobra.Command{Use: "stop", RunE: func(*cobra.Command, []string) error {
		return &ExitError{Code: exitInterrupted}
	}})
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	assert.Equal(t, 130, execute(cancelled, root, []string{"stop"}, &errb))
	assert.Empty(t, errb.String())
}

// TestErrorHasOnePrefix: a command's own error message that already names
// the program is not prefixed again.
func TestErrorHasOnePrefix(t *testing.T) {
	var errb bytes.Buffer
	root := NewRoot(&IO{Out: &errb, Err: &errb})
	root.AddCommand(&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error {
		return errors.New("volanogo fail: it broke")
	}})
	assert.Equal(t, 1, execute(context.Background(), root, []string{"fail"}, &errb))
	assert.Equal(t, "volanogo fail: it broke\n", errb.String())
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
