package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/loadtext"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// loadSink is where `volanogo load` puts a campaign's runs: Mark's lines
// and volanogo's to standard output (standard error with -o -) and to the
// -file log, the result documents to -o, and progress to a terminal.
type loadSink struct {
	text     io.Writer
	out      *errWriter // where text goes beside the log
	screen   io.Writer  // out, or out folded at 80 columns (not -v)
	wrap     *loadtext.Wrap
	verbose  bool
	log      *logFile
	output   string // -o as given
	outPath  string // where documents go, once decided ("" none)
	decided  bool
	docOut   io.Writer // -o -: documents as JSON lines
	progress *progressLine
	many     bool
	files    []string
	cfg      campaign.Config
}

func newLoadSink(streams *IO, o *loadOptions, cfg campaign.Config) (*loadSink, error) {
	s := &loadSink{output: o.output, cfg: cfg}
	s.out = &errWriter{w: streams.Out, name: "standard output"}
	if o.output == "-" {
		s.out.w, s.out.name, s.docOut = streams.Err, "standard error", streams.Out
	}
	if o.json {
		// standard output is the --json line's
		s.out.w, s.out.name = streams.Err, "standard error"
	}
	if err := checkOutputPath(o.output); err != nil {
		return nil, err // with --json too (it was skipped: refused only after the run)
	}
	s.screen, s.verbose = s.out, o.verbose
	if !o.verbose {
		s.wrap = loadtext.NewWrap(s.out, loadtext.Width)
		s.screen = s.wrap
	}
	s.text = s.screen
	if dir := outputDir(o.output); dir != "" {
		if err := probeDir(dir); err != nil {
			return nil, fmt.Errorf("-o %s: %w", o.output, err)
		}
	}
	if o.file != "" {
		l, err := openLogFile(o.file, func(w io.Writer) {
			loadtext.EnvironmentHeader(w, campaign.Environment(), swarm.PlatformProps(), cfg.CommandLine)
		})
		if err != nil {
			return nil, err
		}
		s.log = l
		s.text = io.MultiWriter(s.screen, l)
	}
	if !o.quiet && (o.progress || isTerminal(streams.Err)) {
		s.progress = newProgressLine(streams.Err)
		if cfg.FindLimit == nil {
			s.progress.eta.plan(cfg.Steps, len(cfg.ServerCPUs), cfg.Spec.Count > 0)
		}
	}
	return s, nil
}

func (s *loadSink) RunStarting(r campaign.RunInfo) {
	s.many = r.Many
	if s.progress != nil {
		s.progress.eta.runStarting(r, time.Now())
	}
	if r.Many {
		loadtext.RunHeading(s.text, r)
	}
}

func (s *loadSink) Progress(p func() campaign.Progress) { s.progress.show(p) }

func (s *loadSink) RunDone(r campaign.RunInfo, d *results.Document) error {
	s.progress.end()
	if s.progress != nil {
		s.progress.eta.runDone(time.Now())
	}
	if cause := diagnoseHTTP(context.Background(), s.cfg, d); cause != "" {
		d.Warnings = append(d.Warnings, cause)
	}
	if s.verbose {
		loadtext.Run(s.text, d)
	} else {
		// The screen gets the short lines, the log the full ones.
		loadtext.RunShort(s.screen, d)
		if s.log != nil {
			loadtext.Run(s.log, d)
		}
	}
	if r.Many {
		fmt.Fprintln(s.text)
	}
	return s.writeDocument(r.Many, d)
}

// summary writes the campaign's summary, short on the screen unless -v.
func (s *loadSink) summary(steps []campaign.Step) {
	if s.verbose {
		loadtext.Summary(s.text, steps)
		return
	}
	loadtext.SummaryShort(s.screen, steps)
	if s.log != nil {
		loadtext.Summary(s.log, steps)
	}
}

func (s *loadSink) SweepStopped(step campaign.Step) {
	s.progress.end()
	loadtext.SweepStopped(s.text, step)
}

// writeDocument writes a run's document where -o says: a JSON line on
// standard output (-), a file, or a file named after the run in a
// directory (always a directory for several runs).
func (s *loadSink) writeDocument(many bool, d *results.Document) error {
	switch {
	case s.output == "":
		return nil
	case s.docOut != nil:
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("-o -: %w", err)
		}
		_, err = s.docOut.Write(append(b, '\n'))
		return err
	}
	if !s.decided {
		p, err := prepareOutput(s.output, many)
		if err != nil {
			return err
		}
		s.outPath, s.decided = p, true
	}
	path := results.OutputPath(s.outPath, d)
	if err := results.WriteFile(path, d); err != nil {
		return err
	}
	s.files = append(s.files, path)
	return nil
}

// checkOutputPath refuses, before any run, an -o that is neither a
// directory (a link to one is fine: the documents go inside it) nor a
// regular file or a new name: a symbolic link to a file, a device or a
// FIFO is never replaced.
func checkOutputPath(o string) error {
	if o == "" {
		return nil
	}
	if fi, err := os.Stat(o); err == nil && fi.IsDir() {
		return nil
	}
	if err := results.CheckOutput(o); err != nil {
		return &UsageError{Err: fmt.Errorf("-o: %w", err)}
	}
	return nil
}

// outputDir is the directory -o's documents go to, or go under when it
// does not exist yet ("" for none, or standard output).
func outputDir(o string) string {
	if o == "" || o == "-" {
		return ""
	}
	if fi, err := os.Stat(o); (err == nil && fi.IsDir()) || strings.HasSuffix(o, "/") || strings.HasSuffix(o, string(filepath.Separator)) {
		return o
	}
	return filepath.Dir(o)
}

// prepareOutput returns where documents go: for several runs, or an -o
// that names a directory or ends in a separator, a directory (created if
// needed); otherwise a file, its directory created if needed.
func prepareOutput(o string, many bool) (string, error) {
	dirLike := strings.HasSuffix(o, "/") || strings.HasSuffix(o, string(filepath.Separator))
	if fi, err := os.Stat(o); err == nil && fi.IsDir() {
		return o + string(filepath.Separator), nil
	}
	if dirLike || many {
		if err := os.MkdirAll(o, 0o755); err != nil {
			return "", fmt.Errorf("-o: %w", err)
		}
		return filepath.Clean(o) + string(filepath.Separator), nil
	}
	if dir := filepath.Dir(o); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("-o: %w", err)
		}
	}
	return o, nil
}

// close ends the -file log (once: renamed into place, or removed after a
// write error) and says whether writing it, or the text beside it, failed.
func (s *loadSink) close() error {
	s.progress.end()
	if s.wrap != nil {
		_ = s.wrap.Flush() // errors are kept by s.out
	}
	if s.log != nil {
		err := s.log.close()
		s.log = nil
		if err != nil {
			return err
		}
	}
	return s.out.err
}
