package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/volanogo/volanogo/internal/metrics"
)

// Config is one run of the suite.
type Config struct {
	Target  string // chat address, host:port
	WS      string // WebSocket URL (ws://host:port/chat); "" skips the WebSocket attacks
	Metrics string // Prometheus URL; "" skips closes by reason and cardinality
	PID     int    // the server's process, for RSS when there are no metrics
	Only    []string

	Duration  time.Duration // how long each attack presses
	Wait      time.Duration // how long the server has to close an attacker it should close
	Window    time.Duration // the probe's before and after windows
	Drip      time.Duration // slowloris: one byte per Drip
	Conns     int           // connections of the connection-heavy attacks
	PerProc   int           // connections one process holds; past it, helper processes
	Self      string        // this program, to re-execute as helpers ("": never)
	Rooms     int           // rooms of the rooms attack
	Privates  int           // private sessions the private-flood attack asks for
	Tolerance float64       // the probe's throughput may fall by this share and still hold

	ProbeUsers int
	ProbeRate  float64       // probe rounds a second
	Timeout    time.Duration // a probe's or a well-formed step's wait for the server
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Duration, 10*time.Second)
	def(&c.Wait, 60*time.Second)
	def(&c.Window, 3*time.Second)
	def(&c.Drip, 10*time.Second)
	def(&c.Timeout, 5*time.Second)
	defInt(&c.Conns, 2000)
	defInt(&c.PerProc, perProc)
	defInt(&c.Rooms, 2000)
	defInt(&c.Privates, 10000)
	defInt(&c.ProbeUsers, 4)
	if c.ProbeRate == 0 {
		c.ProbeRate = 100
	}
	if c.Tolerance == 0 {
		c.Tolerance = 0.5
	}
}

// Verdicts.
const (
	Held     = "held"
	Degraded = "degraded"
	Failed   = "failed"
	Skipped  = "skipped"
)

// Row is one attack's line of the table.
type Row struct {
	Attack     string
	Verdict    string
	Before     probeWindow
	During     probeWindow
	After      probeWindow
	Served     int64 // new connections served during the attack
	Unserved   int64 // and refused or timed out
	RSSBefore  int64
	RSSAfter   int64
	Attackers  int
	Closed     int // attackers the server closed in time
	WantClosed bool
	Closes     map[string]float64 // closes by reason during the attack (metrics)
	Figures    string
	Why        string // why not held
	Elapsed    time.Duration
}

// outcome is what an attack reports.
type outcome struct {
	attackers  int
	closed     int
	wantClosed bool
	reasons    []string // acceptable close reasons; nil: any
	figures    string
	problem    string // something a held server would not do
}

// env is what an attack may use.
type env struct {
	cfg     *Config
	metrics func(ctx context.Context) (metrics.Samples, error)
}

// attack is one row of the suite.
type attack struct {
	name   string
	what   string
	needWS bool
	needM  bool
	// repeat: the attack is over in an instant, so it is made again and
	// again for the duration, so that the real users are measured under it.
	repeat bool
	run    func(ctx context.Context, e *env) outcome
}

// press runs a, over and over for the duration if it repeats, and adds
// up what it reports.
func press(ctx context.Context, e *env, a attack) outcome {
	if !a.repeat {
		return a.run(ctx, e)
	}
	var sum outcome
	deadline := time.Now().Add(e.cfg.Duration)
	rounds := 0
	for rounds == 0 || time.Now().Before(deadline) && ctx.Err() == nil {
		o := a.run(ctx, e)
		rounds++
		sum.attackers += o.attackers
		sum.closed += o.closed
		sum.wantClosed = o.wantClosed
		sum.reasons = o.reasons
		sum.figures = o.figures
		if sum.problem == "" {
			sum.problem = o.problem
		}
	}
	sum.figures = strings.TrimPrefix(fmt.Sprintf("%s; %d rounds", sum.figures, rounds), "; ")
	return sum
}

// Run runs the selected attacks one after the other, with the probe going
// throughout, and writes each row to progress as it ends.
func Run(ctx context.Context, cfg Config, progress io.Writer) ([]Row, error) {
	cfg.setDefaults()
	atks, err := selectAttacks(cfg.Only)
	if err != nil {
		return nil, err
	}
	e := &env{cfg: &cfg, metrics: func(ctx context.Context) (metrics.Samples, error) {
		if cfg.Metrics == "" {
			return nil, nil
		}
		return metrics.Scrape(ctx, nil, cfg.Metrics)
	}}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	pr := &probe{addr: cfg.Target, room: "TortureProbe", users: cfg.ProbeUsers, rate: cfg.ProbeRate, timeout: cfg.Timeout}
	cp := &connProbe{addr: cfg.Target, interval: 200 * time.Millisecond, timeout: cfg.Timeout}
	wg.Add(2)
	go func() { defer wg.Done(); pr.run(pctx) }()
	go func() { defer wg.Done(); cp.run(pctx) }()
	if err := waitProbe(ctx, pr, cfg.Timeout*3); err != nil {
		return nil, fmt.Errorf("the real users cannot chat before any attack: %w", err)
	}
	var rows []Row
	for _, a := range atks {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		row := runOne(ctx, e, pr, cp, a)
		rows = append(rows, row)
		fmt.Fprintf(progress, "%s %-20s %s %s %s\n", time.Now().UTC().Format("15:04:05"), a.name, row.Verdict, row.Figures, row.Why)
		if row.Verdict == Failed {
			// Give the probe its chance to come back for the next attack.
			_ = waitProbe(ctx, pr, 10*time.Second)
		}
	}
	return rows, nil
}

// waitProbe waits until the probe has made a round since now.
func waitProbe(ctx context.Context, pr *probe, wait time.Duration) error {
	m := pr.mark()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if w := pr.since(m); w.Rounds > 0 {
			pr.reset()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := pr.cut(); err != nil {
		return err
	}
	return fmt.Errorf("no round in %v", wait)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func runOne(ctx context.Context, e *env, pr *probe, cp *connProbe, a attack) Row {
	cfg := e.cfg
	row := Row{Attack: a.name}
	if a.needWS && cfg.WS == "" || a.needM && cfg.Metrics == "" {
		row.Verdict = Skipped
		row.Why = "no --ws or --metrics"
		return row
	}
	start := time.Now()
	m0, _ := e.metrics(ctx)
	row.RSSBefore = rss(cfg, m0)
	mk := pr.mark()
	sleepCtx(ctx, cfg.Window)
	row.Before = pr.since(mk)

	ok0, bad0, _ := cp.counts()
	mk = pr.mark()
	actx, cancel := context.WithTimeout(ctx, cfg.Duration+cfg.Wait+time.Minute)
	out := press(actx, e, a)
	cancel()
	row.During = pr.since(mk)
	ok1, bad1, lastErr := cp.counts()
	row.Served, row.Unserved = ok1-ok0, bad1-bad0

	mk = pr.mark()
	sleepCtx(ctx, cfg.Window)
	row.After = pr.since(mk)
	m1, merr := e.metrics(ctx)
	row.RSSAfter = rss(cfg, m1)
	row.Attackers, row.Closed, row.WantClosed, row.Figures = out.attackers, out.closed, out.wantClosed, out.figures
	row.Closes = closesDelta(m0, m1)
	row.Elapsed = time.Since(start)

	alive := (&connProbe{addr: cfg.Target, timeout: cfg.Timeout}).once(ctx)
	var why []string
	switch {
	case alive != nil:
		row.Verdict = Failed
		why = append(why, "server not answering: "+alive.Error())
	case row.During.Err != nil || row.After.Err != nil:
		row.Verdict = Failed
		err := row.During.Err
		if err == nil {
			err = row.After.Err
		}
		why = append(why, "real users cut off: "+err.Error())
	default:
		row.Verdict = Held
	}
	// A window under half a second measures nothing (the smoke test's).
	floor := (1 - cfg.Tolerance) * row.Before.Rate()
	if row.During.Rate() < floor && row.During.Seconds >= 0.5 {
		why = append(why, fmt.Sprintf("throughput during %.0f/s < %.0f%% of before", row.During.Rate(), 100*(1-cfg.Tolerance)))
	}
	if row.After.Rate() < floor && row.After.Seconds >= 0.5 {
		why = append(why, fmt.Sprintf("throughput after %.0f/s < %.0f%% of before", row.After.Rate(), 100*(1-cfg.Tolerance)))
	}
	if row.Unserved > 0 {
		why = append(why, fmt.Sprintf("%d new connections not served (%v)", row.Unserved, lastErr))
	}
	if out.wantClosed && out.closed < out.attackers {
		why = append(why, fmt.Sprintf("%d of %d attackers still open after %v", out.attackers-out.closed, out.attackers, cfg.Wait))
	}
	if out.wantClosed && out.reasons != nil && m1 != nil && merr == nil && out.closed > 0 {
		var n float64
		for _, r := range out.reasons {
			n += row.Closes[r]
		}
		if n < float64(out.closed) {
			why = append(why, fmt.Sprintf("closes by %s: %.0f, attackers closed: %d (closes: %s)", strings.Join(out.reasons, "/"), n, out.closed, formatCloses(row.Closes)))
		}
	}
	if out.problem != "" {
		why = append(why, out.problem)
	}
	if row.Verdict == Held && len(why) > 0 {
		row.Verdict = Degraded
	}
	row.Why = strings.Join(why, "; ")
	return row
}

func rss(cfg *Config, m metrics.Samples) int64 {
	if cfg.PID > 0 {
		if v := rssOf(cfg.PID); v > 0 {
			return v
		}
	}
	if v, ok := m.Get("process_resident_memory_bytes"); ok {
		return int64(v)
	}
	return 0
}

// closesDelta is the growth of each close and refusal reason.
func closesDelta(m0, m1 metrics.Samples) map[string]float64 {
	d := map[string]float64{}
	for _, k := range []struct{ metric, prefix string }{
		{"volanogo_connections_closed_total", ""},
		{"volanogo_connections_refused_total", "refused:"},
		{"volanogo_requests_refused_total", "refused:"},
	} {
		for _, s := range m1[k.metric] {
			r := s.Labels["reason"]
			v0, _ := m0.Get(k.metric, "reason", r)
			if n := s.Value - v0; n > 0 {
				d[k.prefix+r] += n
			}
		}
	}
	return d
}

func formatCloses(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// WriteTable prints the rows.
func WriteTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\toutcome\tusers chats/s before/during/after\tp99 ms during\tnew conns served\tRSS MB before/after\tattackers closed\tcloses by reason\tfigures")
	for _, r := range rows {
		if r.Verdict == Skipped {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t%s\n", r.Attack, r.Verdict, r.Why)
			continue
		}
		closed := "-"
		if r.Attackers > 0 {
			closed = fmt.Sprintf("%d/%d", r.Closed, r.Attackers)
			if !r.WantClosed {
				closed += " (n/a)"
			}
		}
		served := fmt.Sprintf("%d", r.Served)
		if r.Unserved > 0 {
			served += fmt.Sprintf(" (%d not)", r.Unserved)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f / %.0f / %.0f\t%.1f\t%s\t%s / %s\t%s\t%s\t%s\n", r.Attack, r.Verdict,
			r.Before.Rate(), r.During.Rate(), r.After.Rate(), float64(r.During.P99.Microseconds())/1000,
			served, mb(r.RSSBefore), mb(r.RSSAfter), closed, formatCloses(r.Closes), r.Figures)
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.Why != "" && r.Verdict != Skipped && r.Verdict != Held {
			fmt.Fprintf(w, "%s: %s\n", r.Attack, r.Why)
		}
	}
}

func mb(b int64) string {
	if b == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

func selectAttacks(only []string) ([]attack, error) {
	all := attacks()
	if len(only) == 0 {
		return all, nil
	}
	var sel []attack
	for _, name := range only {
		i := slices.IndexFunc(all, func(a attack) bool { return a.name == name })
		if i < 0 {
			var names []string
			for _, a := range all {
				names = append(names, a.name)
			}
			return nil, fmt.Errorf("no attack %q (attacks: %s)", name, strings.Join(names, ", "))
		}
		sel = append(sel, all[i])
	}
	return sel, nil
}
