package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// Result is what Run did: every step with its runs and the run rules'
// score.
type Result struct {
	Steps []StepSummary
	// Files are the result documents written.
	Files []string
}

// Run runs the configured steps, each with its runs, writing each run's
// result (Mark's lines and volanogo's) to out and to cfg.File, and each
// run's document to cfg.Output. It returns ErrFailed when a run failed,
// ErrInterrupted when ctx ended it, a *ConfigError for a configuration it
// refuses, and other errors when it could not run or write at all.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	initPlatform()
	addrs, _ := ParseBind(cfg.Bind)
	bind := newBinder(addrs)

	w := out
	if cfg.File != "" {
		f, err := os.Create(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("-file: %w", err)
		}
		defer f.Close()
		environmentHeader(f, &cfg)
		w = io.MultiWriter(out, f)
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	outDir, err := prepareOutput(cfg.Output, len(cfg.Steps)*max(1, len(cfg.ServerCPUs))*cfg.Runs)
	if err != nil {
		return nil, err
	}
	progress := newProgress(cfg.Progress)
	defer progress.end()

	res := &Result{}
	failed, interrupted := false, false
	cpuList := cfg.ServerCPUs
	if len(cpuList) == 0 {
		cpuList = []int{0}
	}
	many := len(cfg.Steps)*len(cpuList) > 1 || cfg.Runs > 1
	first := true
steps:
	for _, rooms := range cfg.Steps {
		for _, cpus := range cpuList {
			step := StepSummary{Rooms: rooms, ServerCPUs: cpus}
			var docs []*results.Document
			for run := 1; run <= cfg.Runs; run++ {
				if ctx.Err() != nil {
					interrupted = true
					break steps
				}
				discarded := run <= cfg.Discard
				if many {
					note := ""
					if discarded {
						note = " (discarded)"
					}
					fmt.Fprintf(w, "Rooms %d%s, run %d of %d%s\n", rooms, cpusNote(cpus), run, cfg.Runs, note)
				}
				spec := runSpec{rooms: rooms, cpus: cpus, run: run, runID: cfg.runID(rooms, cpus, run, many)}
				if first {
					spec.startAt = cfg.StartAt
				}
				first = false
				doc, err := runStep(ctx, &cfg, spec, bind, progress)
				if err != nil {
					return res, err
				}
				progress.end()
				doc.Step, doc.Run, doc.Discarded = rooms, run, discarded && many
				writeRun(w, doc)
				if many {
					fmt.Fprintln(w)
				}
				if outDir != "" {
					path := results.OutputPath(outDir, doc)
					if err := results.WriteFile(path, doc); err != nil {
						return res, err
					}
					res.Files = append(res.Files, path)
				}
				docs = append(docs, doc)
				if doc.Interrupted {
					interrupted = true
					step = summarize(rooms, docs)
					step.ServerCPUs = cpus
					res.Steps = append(res.Steps, step)
					break steps
				}
				if !doc.Passed || (doc.Paced != nil && doc.Paced.Broken) {
					failed = true
				}
				if hasKind(doc, results.FailServerStart) {
					step = summarize(rooms, docs)
					step.ServerCPUs = cpus
					res.Steps = append(res.Steps, step)
					break steps
				}
			}
			step = summarize(rooms, docs)
			step.ServerCPUs = cpus
			res.Steps = append(res.Steps, step)
			if cfg.Pause > 0 && !step.Passed && !cfg.KeepGoing && len(cfg.Steps)*len(cpuList) > 1 {
				fmt.Fprintf(w, "The sweep stops at %d rooms%s: the step broke (--keep-going runs the next steps).\n\n", rooms, cpusNote(cpus))
				break steps
			}
		}
	}
	if many && len(res.Steps) > 0 {
		writeSummary(w, res.Steps)
	}
	switch {
	case interrupted:
		return res, ErrInterrupted
	case failed:
		return res, ErrFailed
	}
	return res, nil
}

func hasKind(d *results.Document, kind string) bool {
	for _, f := range d.Failures {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// prepareOutput returns where documents go: for several documents, -o is
// a directory (created if needed).
func prepareOutput(o string, docs int) (string, error) {
	if o == "" {
		return "", nil
	}
	dirLike := strings.HasSuffix(o, "/") || strings.HasSuffix(o, string(filepath.Separator))
	if fi, err := os.Stat(o); err == nil && fi.IsDir() {
		return o, nil
	}
	if dirLike || docs > 1 {
		if err := os.MkdirAll(o, 0o755); err != nil {
			return "", fmt.Errorf("-o: %w", err)
		}
		return o + string(filepath.Separator), nil
	}
	if dir := filepath.Dir(o); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("-o: %w", err)
		}
	}
	return o, nil
}

// runStep runs one run: it starts the server when asked, runs the rooms
// and stops the server.
func runStep(ctx context.Context, cfg *Config, spec runSpec, bind *binder, progress *progressLine) (*results.Document, error) {
	d := &dialer{
		transport: cfg.Transport,
		addr:      net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)),
		url:       cfg.URL,
		bind:      bind,
		timeout:   cfg.StallTimeout,
	}
	var probe serverProbe
	if cfg.ServerMetrics != "" {
		probe = metricsProbe{url: cfg.ServerMetrics}
	}
	var srv *spawned
	var serverCmd []string
	if cfg.Serve || cfg.ServerCmd != "" {
		var err error
		if cfg.Serve {
			argv := cfg.ServeCommand
			if len(argv) == 0 {
				if argv, err = defaultServeCommand(cfg.Transport == TransportWS); err != nil {
					return nil, err
				}
			} else if cfg.Transport == TransportWS && !contains(argv, "--ws-listen") {
				argv = append(append([]string(nil), argv...), "--ws-listen", "127.0.0.1:0")
			}
			srv, err = startServe(ctx, argv, spec.cpus)
		} else {
			srv, err = startServerCmd(ctx, cfg.ServerCmd, spec.cpus)
		}
		if err == nil && testHookServerStarted != nil {
			testHookServerStarted(srv.pid())
		}
		if err != nil {
			doc := newDocument(cfg, spec)
			doc.Started, doc.Ended = time.Now(), time.Now()
			doc.TimedStart, doc.TimedEnd = doc.Started, doc.Started
			doc.Interrupted = ctx.Err() != nil
			kind := results.FailServerStart
			if doc.Interrupted {
				kind = results.FailOther
			}
			doc.Failures = []results.Failure{{Kind: kind, Count: 1, Example: err.Error(), At: time.Now()}}
			return doc, nil
		}
		defer srv.stop()
		serverCmd = srv.argv
		d.addr = srv.chat
		if cfg.Transport == TransportWS {
			d.url = "ws://" + srv.ws + "/chat"
		}
		switch {
		case cfg.ServerMetrics != "":
		case srv.metrics != "":
			probe = metricsProbe{url: "http://" + srv.metrics + "/metrics"}
		default:
			probe = procProbe{pid: srv.pid()}
		}
	}
	var doc *results.Document
	var err error
	switch {
	case cfg.Procs != 0:
		doc, err = runProcs(ctx, cfg, spec, d, probe, progress)
	case cfg.SplitWhenNeeded && cfg.ShardCount == 0 && cfg.Scenario != results.ScenarioChurn && autoProcs(spec.rooms, cfg.Users) > 1:
		split := *cfg
		split.Procs = ProcsAuto
		doc, err = runProcs(ctx, &split, spec, d, probe, progress)
	default:
		doc, err = runOnce(ctx, cfg, spec, d, probe, progress)
	}
	if doc != nil && srv != nil {
		doc.Config.ServerCommand = serverCmd
		if doc.Server != nil {
			doc.Server.CPUs = sysinfo.ProcessCPUs(srv.pid())
		}
		if d.transport == TransportTCP {
			host, port, _ := net.SplitHostPort(d.addr)
			doc.Config.Host = host
			doc.Config.Port, _ = strconv.Atoi(port)
		} else {
			doc.Config.URL = d.url
		}
	}
	return doc, err
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// runSpec is one run of a step.
type runSpec struct {
	rooms, cpus, run int
	runID            string
	// startAt is Config.StartAt for the first run, zero for the others.
	startAt time.Time
}

// testHookServerStarted, when set, is called with the pid of each server
// the client starts.
var testHookServerStarted func(pid int)

func cpusNote(cpus int) string {
	if cpus <= 0 {
		return ""
	}
	return fmt.Sprintf(", server CPUs %d", cpus)
}

// runID is the id of one run: Config.RunID (with the run's place when
// there are several), or a new one.
func (c *Config) runID(rooms, cpus, run int, many bool) string {
	switch {
	case c.RunID == "":
		return newRunID()
	case !many:
		return c.RunID
	case cpus > 0:
		return fmt.Sprintf("%s-%d-c%d-%d", c.RunID, rooms, cpus, run)
	}
	return fmt.Sprintf("%s-%d-%d", c.RunID, rooms, run)
}

// ShardRooms returns the room numbers of shard index of count when a step
// of rooms rooms numbered from start is split: the contiguous block
// [start+rooms*index/count, start+rooms*(index+1)/count), so that the
// shards' sizes differ by at most one room and a room never spans two
// shards. count 0 is the whole step.
func ShardRooms(start, rooms, index, count int) []int {
	lo, hi := 0, rooms
	if count > 0 {
		lo, hi = rooms*index/count, rooms*(index+1)/count
	}
	nums := make([]int, 0, hi-lo)
	for r := lo; r < hi; r++ {
		nums = append(nums, start+r)
	}
	return nums
}

// scenario is the run's scenario name for the document.
func (c *Config) scenario() string {
	switch {
	case c.Scenario == results.ScenarioChurn:
		return results.ScenarioChurn
	case c.Pause > 0:
		return results.ScenarioPaced
	}
	return results.ScenarioTurns
}

// newDocument starts a run's document.
func newDocument(cfg *Config, spec runSpec) *results.Document {
	bi := buildinfo.Get()
	rooms := spec.rooms
	id := spec.runID
	if id == "" {
		id = newRunID()
	}
	d := &results.Document{
		Schema:      results.SchemaVersion,
		RunID:       id,
		Label:       cfg.Label,
		Tool:        results.Tool{Name: "volanogo", Version: orDash(bi.Version), Commit: bi.Commit, GoVersion: bi.GoVersion},
		CommandLine: cfg.CommandLine,
		Environment: environment,
		Config: results.Config{
			Scenario:            cfg.scenario(),
			Transport:           cfg.Transport,
			StartRoom:           cfg.Start,
			Rooms:               rooms,
			Users:               cfg.Users,
			Count:               cfg.Count,
			PauseSeconds:        cfg.Pause.Seconds(),
			DurationSeconds:     cfg.Duration.Seconds(),
			ConnectRate:         cfg.ConnectRate,
			ConnectConcurrency:  cfg.ConnectConcurrency,
			StallTimeoutSeconds: cfg.StallTimeout.Seconds(),
			SLOSeconds:          cfg.SLO.Seconds(),
			Bind:                cfg.Bind,
			ServerCPUs:          spec.cpus,
		},
	}
	if cfg.ShardCount > 0 {
		d.Shard = &results.Shard{Index: cfg.ShardIndex, Count: cfg.ShardCount, StartAt: spec.startAt,
			Rooms: ShardRooms(cfg.Start, rooms, cfg.ShardIndex, cfg.ShardCount)}
	}
	if cfg.Transport == TransportWS {
		d.Config.URL = cfg.URL
	} else {
		d.Config.Host, d.Config.Port = cfg.Host, cfg.Port
	}
	if d.Label == "" {
		d.Label = defaultLabel(cfg)
	}
	return d
}

func defaultLabel(cfg *Config) string {
	switch {
	case cfg.Serve:
		return "volanogo serve " + orDash(buildinfo.Get().Version) + ", " + environment.GoVersion
	case cfg.ServerCmd != "":
		return strings.Fields(cfg.ServerCmd)[0]
	case cfg.Transport == TransportWS:
		return cfg.URL
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
}

func newRunID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

// IsUsage reports whether err is a configuration the engine refused.
func IsUsage(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}
