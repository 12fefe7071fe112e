// Package cli wires volanogo's commands to its engines. Each command binds
// its flags into an options struct and calls one engine (internal/server,
// internal/campaign, internal/report); no benchmark logic lives here. The
// CLI owns what the engines must not touch: files (-o, -file, profiles),
// the terminal (progress) and the process's exit status.
//
// Commands register themselves from their own files with register, so that
// adding a command never edits this one.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/usage"
)

// IO is where a command reads and writes: the process's standard streams in
// main, buffers in tests.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// commands holds the constructors registered by the command files.
var commands []func(*IO) *cobra.Command

func register(newCmd func(*IO) *cobra.Command) { commands = append(commands, newCmd) }

// UsageError is a bad command line: the error and a hint to run --help
// are printed and the process exits with status 2. It is the one usage
// error type of every layer (usage.Error): a campaign's or a swarm's
// refusal is one too.
type UsageError = usage.Error

// ExitError ends the process with Code after printing nothing more than
// the command already printed (Msg, when set, goes to stderr).
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// helpWidth is the width of every line --help prints.
const helpWidth = 80

// NewRoot builds the volanogo command tree.
func NewRoot(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "volanogo",
		Short: "VolanoMark rebuilt in Go: chat server, client swarm and the Volano Report",
		Long: `volanogo measures how well a platform carries a chat server with thousands
of long-lived connections, as VolanoMark did from 1997 to 2005: a chat
server, a swarm of users taking turns broadcasting in rooms of 20, and a
report that turns runs into scores, scalability tables and footnotes.`,
		Example: `  volanogo serve                        # terminal 1: chat :8000, metrics :8002
  volanogo load -count 100              # terminal 2: 50 rooms x 20, the score
  volanogo load -rooms 105 -o results/  # the scalability test's 2,100 step
  volanogo report results/                # tables, footnotes, environments

  # The Volano Report's run rules in one command: a fresh server per run,
  # 4 runs, the first discarded, the score the average of the best 2 of 3
  volanogo load --serve -count 100`,
		Version:       buildinfo.Get().Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetVersionTemplate(buildinfo.Get().String() + "\n")
	root.SetFlagErrorFunc(flagError)
	// --help fits 80 columns: the flags' descriptions wrap beside their names.
	root.SetUsageTemplate(strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages", fmt.Sprintf(".FlagUsagesWrapped %d", helpWidth)))
	root.AddCommand(newVersionCmd(io))
	for _, newCmd := range commands {
		c := newCmd(io)
		c.SetFlagErrorFunc(flagError)
		root.AddCommand(c)
	}
	// cobra's completion command, added now rather than at Execute so that
	// its help is in the tree the width test walks, wrapped to helpWidth
	// (cobra's bash help has an 82-column line).
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			for _, sub := range c.Commands() {
				sub.Long = wrapLines(sub.Long, helpWidth)
			}
		}
	}
	return root
}

// wrapLines breaks each line of s wider than width at its last space that
// fits, the continuation indented as the line was.
func wrapLines(s string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		for len([]rune(line)) > width {
			r := []rune(line)
			cut := strings.LastIndex(string(r[:width+1]), " ")
			if cut <= len(indent) {
				break // one word wider than width: left whole
			}
			b.WriteString(line[:cut] + "\n")
			line = indent + strings.TrimLeft(line[cut:], " ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// flagError makes a bad flag a usage error, and names the flags an
// unknown one may have meant ("--romes: illegal argument (unknown option)
// (did you mean --rooms?)"): those within two edits of it, or that it
// begins.
func flagError(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return &UsageError{Err: err}
	}
	var near []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(name, f.Name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name))) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return &UsageError{Err: err}
	}
	return &UsageError{Err: err, Hint: "did you mean " + strings.Join(near, " or ") + "?"}
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func newVersionCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Example: `  volanogo version
  volanogo --version`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(io.Out, buildinfo.Get().String())
			return err
		},
	}
}

// Exit statuses of Main besides 0 (success) and 1 (failure).
const (
	// exitUsage is a bad command line.
	exitUsage = 2
	// exitInterrupted is the exit status of an interrupted command: 128 +
	// SIGINT, as shells report a command that Ctrl-C stopped.
	exitInterrupted = 130
)

// Main runs volanogo with args (without the program name) and returns the
// process exit status: 0 success, 1 failure, 2 usage, 130 interrupted (ctx
// was cancelled, by SIGINT or SIGTERM in main, and the command failed),
// or the status a command chose (ExitError: report --compare's 3).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	io := &IO{In: stdin, Out: stdout, Err: stderr}
	return execute(ctx, NewRoot(io), args, stderr)
}

// execute runs root with args and turns what the command returned into an
// exit status, printing its error on stderr: one line, then for a usage
// error one more, the hint "Run 'volanogo load --help' for usage.", never
// the whole usage.
func execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	normalized := normalizeArgs(root, args)
	root.SetArgs(normalized)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if cmd == nil {
		cmd = root
	}
	if ctx.Err() != nil {
		// Interrupted: whatever the command made of it (a failed run, a
		// context error), the shell's convention is 128 + SIGINT.
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Code != exitInterrupted {
			fmt.Fprintln(stderr, errorLine(cmd, errors.New("interrupted")))
		} else if exit.Msg != "" {
			fmt.Fprintln(stderr, exit.Msg)
		}
		return exitInterrupted
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Msg != "" {
			fmt.Fprintln(stderr, exit.Msg)
		}
		return exit.Code
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		// Mark's wording for an unknown option, spelt as it was typed.
		if name, ok := strings.CutPrefix(usage.Error(), "unknown flag: "); ok {
			typed := name
			for i, a := range normalized {
				if a == name && i < len(args) {
					typed = args[i]
				}
			}
			err = fmt.Errorf("%s: illegal argument (unknown option)", typed)
		}
		if usage.Hint != "" {
			err = fmt.Errorf("%w (%s)", err, usage.Hint)
		}
	}
	if usage != nil || isCobraUsage(err) {
		fmt.Fprintln(stderr, errorLine(cmd, oneLine(err)))
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	fmt.Fprintln(stderr, errorLine(cmd, err))
	return 1
}

// isCobraUsage reports whether err is one of cobra's own command-line
// errors (an unknown command, a wrong number of arguments).
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires ", "unknown flag", "unknown shorthand flag", "flag needs an argument"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// errorLine is err prefixed with the command's path ("volanogo load: …"),
// unless the message already starts with it or with the program's name.
func errorLine(cmd *cobra.Command, err error) string {
	msg := err.Error()
	path := cmd.CommandPath()
	if strings.HasPrefix(msg, path+":") || strings.HasPrefix(msg, cmd.Root().Name()+" ") ||
		strings.HasPrefix(msg, cmd.Root().Name()+":") {
		return msg
	}
	return path + ": " + msg
}

// oneLine folds a multi-line error onto one line: cobra's "Did you mean
// this?" list becomes "(did you mean load?)", and the redundant "for
// \"volanogo\"" of an unknown command goes.
func oneLine(err error) error {
	s := err.Error()
	head, rest, multi := strings.Cut(s, "\n")
	if i := strings.Index(head, " for \""); strings.HasPrefix(head, "unknown command") && i >= 0 {
		head = head[:i]
	}
	if !multi {
		return errors.New(head)
	}
	var sugg []string
	if _, list, ok := strings.Cut(rest, "Did you mean this?"); ok {
		for _, l := range strings.Split(list, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				sugg = append(sugg, l)
			}
		}
	} else {
		for _, l := range strings.Split(rest, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				head += "; " + l
			}
		}
	}
	if len(sugg) > 0 {
		head += " (did you mean " + strings.Join(sugg, " or ") + "?)"
	}
	return errors.New(head)
}

// normalizeArgs lets every command take its long options with one dash, as
// VolanoMark's did ("-rooms 105"): an argument "-name" or "-name=value"
// whose name is a long flag of the selected command (and not a run of
// shorthand letters) becomes "--name". Arguments after "--" are untouched.
func normalizeArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name := a[1:]
		if j := strings.IndexByte(name, '='); j >= 0 {
			name = name[:j]
		}
		if len(name) < 2 {
			continue
		}
		// A known long flag, or an unknown word that does not start with
		// one of the command's shorthand letters (so that "-bogus" is
		// reported as the unknown option it is, not as "-b -o -g...").
		if lookupFlag(cmd, name) != nil || shorthand(cmd, name[0]) == nil {
			out[i] = "-" + a
		}
	}
	return out
}

func shorthand(cmd *cobra.Command, c byte) *pflag.Flag {
	if f := cmd.Flags().ShorthandLookup(string(c)); f != nil {
		return f
	}
	return cmd.InheritedFlags().ShorthandLookup(string(c))
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}
