package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volanogo/volanogo/internal/report"
	"github.com/volanogo/volanogo/internal/results"
)

func init() { register(newReportCmd) }

// reportOpts are the flags of `volanogo report`.
type reportOpts struct {
	format  string
	output  string
	discard int
	best    int
	of      int
	by      string
	step    int
	compare compareFlag
	// threshold is --threshold as typed ("5%"), "" when not given.
	threshold string
}

// compareFlag collects the two words of --compare, OLD and NEW. It
// accepts "--compare A,B", "--compare A --compare B" and "--compare A B":
// when only one word was given, the positional word that followed it is
// always the second (Set records how many positional words came before
// it). Whether the words are labels or paths is decided by comparePaths.
type compareFlag struct {
	fs     *pflag.FlagSet
	labels []string
	// at is the number of positional arguments parsed before the last
	// --compare.
	at int
}

func (c *compareFlag) String() string { return strings.Join(c.labels, ",") }
func (c *compareFlag) Type() string   { return "A B" }
func (c *compareFlag) Set(s string) error {
	for _, l := range strings.Split(s, ",") {
		if l = strings.TrimSpace(l); l != "" {
			c.labels = append(c.labels, l)
		}
	}
	c.at = c.fs.NArg()
	return nil
}

// resolve completes the labels from the positional args and returns the
// remaining args.
func (c *compareFlag) resolve(args []string) ([2]string, []string, error) {
	switch len(c.labels) {
	case 0:
		return [2]string{}, args, nil
	case 1:
		if c.at >= len(args) {
			return [2]string{}, args, errors.New("--compare needs two labels: --compare A B")
		}
		rest := slices.Delete(slices.Clone(args), c.at, c.at+1)
		return [2]string{c.labels[0], args[c.at]}, rest, nil
	case 2:
		return [2]string{c.labels[0], c.labels[1]}, args, nil
	}
	return [2]string{}, args, fmt.Errorf("--compare takes two labels, got %d (%s)", len(c.labels), c.String())
}

func newReportCmd(io *IO) *cobra.Command {
	o := &reportOpts{}
	cmd := &cobra.Command{
		Use:   "report [files or directories...]",
		Short: "Turn result documents into the Volano Report",
		Long: `report reads the result documents written by "volanogo load" and prints the
Volano Report: "Is it fast?" (the counted results and the score of every
platform), "Does it scale?" (scores by connection count, failed steps as
----a with a lettered footnote, and the Limit: the most connections any run
held; a step whose runs lasted under one second has no score and shows
----a too), delivery latency percentiles, the paced capacity table, the
connection churn table (sequences per second, a user's first sequence
against the later ones, what the server leaked), processor scalability, the
comparison of two platforms, and the environments and command lines of
every platform.

Arguments are result files, directories (every *.json file directly inside,
not recursively) or "-" for one document on standard input; the default is
the current directory. Shards of one run (same run id) are merged first.

Run rule: the runs of a step are ordered by run number and start time; the
first --discard runs are dropped (and any run the load marked discarded);
the score is the average of the best --best of the next --of runs, as the
Volano Report did (discard 1, best 2 of 3). A client-bound cell (the client,
not the server, was the bottleneck) is marked "*".

--compare OLD NEW sets two platforms side by side, metric by metric, with
the ratio and a Mann-Whitney U test over the runs (alpha 0.05, "~" when
the difference is not significant, as benchstat prints it). --compare
always takes the next two words (also --compare OLD,NEW and --compare OLD
--compare NEW). OLD and NEW are either
  - two labels (platforms) of the documents named by the other arguments
    (the current directory when there are none), or
  - with no other arguments, two result files or directories: each is one
    set of runs, compared as a whole under its path's name.
A word that names an existing file or directory is a path; a mix of one
path and one label, or paths beside other arguments, is refused. With 3
counted runs a side no difference can be significant (the smallest p-value
is 0.1): the report says so; 4 runs a side are needed (load -runs 5).

--threshold 5% makes --compare a gate for CI: the exit status is 3 when a
metric of NEW (score, latency, CPU per message, ...) is significantly worse
than OLD's by more than 5%. The verdict is printed under the comparison;
when the runs are too few for any significance, it says the gate cannot
fail (and so does a line on stderr).

Format: text, unless --format names another (text, markdown or md, html,
json, csv). With -o FILE and no --format, the extension of FILE chooses:
.html or .htm is html, .md or .markdown is markdown, .json is json, .csv is
csv (in any case: .HTML too); any other extension, or none, is text.
--format always wins over the extension.

Files that are not result documents, of an unknown schema or truncated are
named on stderr and skipped; the report of the rest is still printed and
the exit status is 1. No document at all is exit status 2. A regression
past --threshold is exit status 3.`,
		Example: `  volanogo report                          # this directory's results, as text
  volanogo report results/ -o report.html  # one HTML page (format: the name's)
  volanogo report --format markdown results/ > REPORT.md
  volanogo report --discard 0 --best 1 --of 1 run.json  # one run, no run rule
  volanogo report --by cpus results/       # a row per label and server CPUs
  volanogo report --compare go1.26-linux java17-volano results/
  volanogo report --compare baseline/ candidate/ --threshold 5%  # 3: regressed
  cat run.json | volanogo report -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, io, o, args)
		},
	}
	f := cmd.Flags()
	o.compare.fs = f
	f.StringVar(&o.format, "format", "text", "output format: text, markdown, html, json or csv; when not given, the extension of -o FILE chooses (.html, .md, .json, .csv; else text)")
	f.StringVarP(&o.output, "output", "o", "", "write the report to `FILE` (atomically; never over a symbolic link, device or FIFO) instead of standard output (-)")
	f.IntVar(&o.discard, "discard", results.DefaultRunRule.Discard, "runs dropped first in every step (`N` runs)")
	f.IntVar(&o.best, "best", results.DefaultRunRule.Best, "the score averages the best `N` counted runs")
	f.IntVar(&o.of, "of", results.DefaultRunRule.Of, "counted runs per step after the discard (`N` runs)")
	f.StringVar(&o.by, "by", report.DefaultBy, "what a row is: label, server (what it recorded: product, version, engine, flags, labels; else its command line) or cpus (label and server processors)")
	f.IntVar(&o.step, "step", 0, "connections of the \"Is it fast?\" table (`N` connections; 0: where most platforms have a score)")
	f.Var(&o.compare, "compare", "compare OLD and NEW metric by metric: two labels, or two result files or directories (sets of runs)")
	f.StringVar(&o.threshold, "threshold", "", "with --compare: exit 3 when NEW is significantly worse than OLD by more than `PERCENT` (5%) in any metric")
	return cmd
}

func runReport(cmd *cobra.Command, io *IO, o *reportOpts, args []string) error {
	cmpLabels, paths, err := o.compare.resolve(args)
	if err != nil {
		return &UsageError{Err: err}
	}
	bySets, err := comparePaths(cmpLabels, paths)
	if err != nil {
		return &UsageError{Err: err}
	}
	if bySets && o.by != report.ByLabel {
		return &UsageError{Err: fmt.Errorf("--by %s: --compare with files or directories compares each set as a whole", o.by)}
	}
	threshold, err := parseThreshold(o.threshold)
	if err != nil {
		return &UsageError{Err: err}
	}
	if threshold != nil && cmpLabels[0] == "" {
		return &UsageError{Err: errors.New("--threshold needs --compare OLD NEW")}
	}
	if o.output != "" && o.output != "-" {
		if err := results.CheckOutput(o.output); err != nil {
			return &UsageError{Err: fmt.Errorf("-o: %w", err)}
		}
	}
	format := o.format
	if !cmd.Flags().Changed("format") && o.output != "" {
		switch strings.ToLower(filepath.Ext(o.output)) {
		case ".html", ".htm":
			format = "html"
		case ".md", ".markdown":
			format = "markdown"
		case ".json":
			format = "json"
		case ".csv":
			format = "csv"
		}
	}
	if format == "md" {
		format = "markdown"
	}
	if !slices.Contains(report.Formats, format) {
		return &UsageError{Err: fmt.Errorf("--format %q: want one of %s", format, strings.Join(report.Formats, ", "))}
	}
	opt := report.Options{Discard: o.discard, Best: o.best, Of: o.of, By: o.by, Compare: cmpLabels,
		Format: format, Step: o.step, Threshold: threshold}
	if o.discard < 0 || o.best < 1 || o.of < 1 || o.step < 0 {
		return &UsageError{Err: errors.New("--discard must be 0 or more, --best and --of 1 or more, --step 0 or more")}
	}
	if err := opt.Check(); err != nil {
		return &UsageError{Err: err}
	}
	var docs []*results.Document
	var errs []error
	if bySets {
		// Each side is one set of runs, named by its path.
		paths = cmpLabels[:]
		for _, side := range cmpLabels {
			ds, es := results.ReadPaths([]string{side}, io.In)
			for _, d := range ds {
				d.Label = side
			}
			docs, errs = append(docs, ds...), append(errs, es...)
		}
	} else {
		if len(paths) == 0 {
			paths = []string{"."}
		}
		docs, errs = results.ReadPaths(paths, io.In)
	}
	merged, mergeErrs := results.MergeAll(docs)
	errs = append(errs, mergeErrs...)
	for _, e := range errs {
		fmt.Fprintf(io.Err, "volanogo report: skipped %v\n", e)
	}
	if len(merged) == 0 {
		msg := fmt.Sprintf("volanogo report: no result documents in %s", strings.Join(paths, " "))
		if hint := subdirHint(paths); hint != "" {
			msg += " (directories are read one level deep; name the subdirectories too: " + hint + ")"
		}
		return &ExitError{Code: 2, Msg: msg}
	}
	rep, err := report.Build(merged, opt)
	if err != nil {
		var ce *report.CompareError
		if errors.As(err, &ce) {
			msg := "volanogo report: " + err.Error()
			if _, serr := os.Stat(ce.Name); serr == nil {
				msg += fmt.Sprintf(" (%q is a file or directory: to compare two sets of runs, give OLD and NEW as paths and no other argument)", ce.Name)
			}
			return &ExitError{Code: 2, Msg: msg}
		}
		return err
	}
	var buf bytes.Buffer
	if err := rep.Render(&buf, format); err != nil {
		return err
	}
	if o.output == "" || o.output == "-" {
		if _, err := io.Out.Write(buf.Bytes()); err != nil {
			return err
		}
	} else if err := results.WriteAtomic(o.output, buf.Bytes()); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	if c := rep.Compare; c != nil && threshold != nil {
		if regs := c.Regressions(); len(regs) > 0 {
			msg := fmt.Sprintf("volanogo report: %s is significantly worse than %s by more than %s in %d metric(s)", c.B, c.A, o.threshold, len(regs))
			if len(errs) > 0 {
				msg += fmt.Sprintf("; %d input(s) skipped", len(errs))
			}
			return &ExitError{Code: exitRegression, Msg: msg}
		}
		if c.Powerless() {
			fmt.Fprintf(io.Err, "volanogo report: --threshold %s: too few runs for any difference to be significant; the gate cannot fail\n", o.threshold)
		}
	}
	if len(errs) > 0 {
		return &ExitError{Code: 1, Msg: fmt.Sprintf("volanogo report: %d input(s) skipped", len(errs))}
	}
	return nil
}

// exitRegression is report's exit status when --compare NEW is worse than
// OLD past --threshold.
const exitRegression = 3

// comparePaths decides what the words of --compare are: true when both
// name existing files or directories and no other argument was given (two
// sets of runs); false when they are labels. A mix is an error that names
// which word is which.
func comparePaths(words [2]string, args []string) (bool, error) {
	if words[0] == "" {
		return false, nil
	}
	var isPath [2]bool
	for i, w := range words {
		_, err := os.Stat(w)
		isPath[i] = err == nil
	}
	switch {
	case len(args) > 0:
		return false, nil
	case isPath[0] && isPath[1]:
		return true, nil
	case isPath[0] != isPath[1]:
		p, l := words[0], words[1]
		if isPath[1] {
			p, l = l, p
		}
		return false, fmt.Errorf("--compare %s %s: %q is a file or directory but %q is not: "+
			"give two result files or directories (two sets of runs), or two labels followed by the documents' paths",
			words[0], words[1], p, l)
	}
	return false, nil
}

// parseThreshold reads --threshold: "5%" or "5" (percent), 0 or more; nil
// when not given.
func parseThreshold(s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("--threshold %q: want a percentage, 0 or more (5%%)", s)
	}
	return &v, nil
}

// subdirHint names the subdirectories of the directories in paths, for an
// error message: "results/go results/java".
func subdirHint(paths []string) string {
	var subs []string
	for _, p := range paths {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				subs = append(subs, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(subs) > 6 {
		subs = append(subs[:6], "…")
	}
	return strings.Join(subs, " ")
}
