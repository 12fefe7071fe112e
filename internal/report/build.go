package report

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
)

// ErrNoDocuments is returned by Build when it is given no document.
var ErrNoDocuments = errors.New("no result documents")

// withDefaults completes the zero fields of o and checks it.
func (o Options) withDefaults() (Options, error) {
	if o.Discard < 0 {
		o.Discard = 0
	}
	if o.Best == 0 {
		o.Best = results.DefaultRunRule.Best
	}
	if o.Of == 0 {
		o.Of = max(results.DefaultRunRule.Of, o.Best)
	}
	if o.By == "" {
		o.By = DefaultBy
	}
	switch {
	case o.Best < 1:
		return o, fmt.Errorf("best %d: must be at least 1", o.Best)
	case o.Of < o.Best:
		return o, fmt.Errorf("best %d of %d: of must be at least best", o.Best, o.Of)
	}
	switch o.By {
	case ByLabel, ByServer, ByCPUs:
	default:
		return o, fmt.Errorf("by %q: must be label, server or cpus", o.By)
	}
	if (o.Compare[0] == "") != (o.Compare[1] == "") {
		return o, errors.New("compare needs two platforms")
	}
	return o, nil
}

// Check reports whether Build accepts o.
func (o Options) Check() error {
	_, err := o.withDefaults()
	return err
}

// CompareError is returned by Build when Options.Compare names a platform
// the documents do not have.
type CompareError struct {
	Name      string
	Platforms []string
}

func (e *CompareError) Error() string {
	return fmt.Sprintf("compare: no platform %q (platforms: %s)", e.Name, strings.Join(e.Platforms, ", "))
}

// DefaultOptions is the Volano run rule: discard 1, best 2 of 3, rows by
// label, text.
func DefaultOptions() Options {
	r := results.DefaultRunRule
	return Options{Discard: r.Discard, Best: r.Best, Of: r.Of, By: DefaultBy, Format: "text"}
}

// cellKey places a document in a cell.
type cellKey struct {
	row  string
	kind string
	step int64
	cpus int
}

// stepKey is a cell without its processor count.
type stepKey struct {
	row  string
	kind string
	step int64
}

// builder holds the state of one Build.
type builder struct {
	opt     Options
	decoded map[*results.Histogram]*hdrhistogram.Histogram // see decode
	merged  map[string]quantiles                           // see mergedHistogram
	rep     *Report
	cells   map[cellKey]*Cell
	docs    map[cellKey][]*results.Document
	// rows maps a row to its documents, in run order.
	rows map[string][]*results.Document
	// base maps a row to the platform it belongs to: its label when rows
	// are by label and processor count, the row itself otherwise.
	base map[string]string
	// main maps a row's step to the processor count its main cell uses.
	main map[stepKey]int
	// causes are the footnotes in citation order.
	causes  []cause
	letters map[cause]string // by cause.shape
	// reordered is each row's note on reordering (see reorderNotes), and
	// warned the note of each kind of run warning (see warningCause).
	reordered map[string]cause
	warned    map[string]cause
	// split names the platforms (labels, or servers by server) whose
	// documents differ by engines: each engine pair is then a platform of
	// its own (see platformOf).
	split map[string]bool
}

// cause is a distinct failure cause: its kind and example, and the
// server's own account of it (results.Failure.Server) when known.
type cause struct{ kind, example, server string }

// Build computes the report of docs under opt. Documents may come in any
// order: the result does not depend on it. A nil document is ignored.
func Build(docs []*results.Document, opt Options) (*Report, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	var in []*results.Document
	for _, d := range docs {
		if d != nil {
			in = append(in, d)
		}
	}
	if len(in) == 0 {
		return nil, ErrNoDocuments
	}
	merged, errs := results.MergeAll(in)
	b := &builder{
		opt:       opt,
		rep:       &Report{Options: opt, Documents: len(merged)},
		cells:     map[cellKey]*Cell{},
		docs:      map[cellKey][]*results.Document{},
		rows:      map[string][]*results.Document{},
		base:      map[string]string{},
		main:      map[stepKey]int{},
		letters:   map[cause]string{},
		reordered: map[string]cause{},
		warned:    map[string]cause{},
	}
	for _, e := range errs {
		b.rep.Warnings = append(b.rep.Warnings, e.Error())
	}
	// A failed try that a later try replaced is left out: the later one
	// counts, and names this one's cause (retryCause).
	merged = slices.DeleteFunc(merged, superseded)
	slices.SortStableFunc(merged, runCompare)
	b.split = splitByEngines(merged, b.nameOf)
	for _, d := range merged {
		k := b.key(d)
		b.base[k.row] = k.row
		if b.opt.By == ByCPUs {
			b.base[k.row] = b.platformOf(d)
		}
		b.docs[k] = append(b.docs[k], d)
		b.rows[k.row] = append(b.rows[k.row], d)
	}
	b.adoptUnknownCPUs()
	keys := sortedKeys(b.docs, func(a, c cellKey) int {
		return cmp.Or(cmp.Compare(a.row, c.row), cmp.Compare(a.kind, c.kind),
			cmp.Compare(a.step, c.step), cmp.Compare(a.cpus, c.cpus))
	})
	b.reorderNotes(keys)
	for _, k := range keys {
		b.cells[k] = b.cell(k, b.docs[k])
		sk := stepKey{k.row, k.kind, k.step}
		if cur, ok := b.main[sk]; !ok || k.cpus > cur {
			b.main[sk] = k.cpus
		}
	}
	b.retryNotes()
	b.fast()
	b.order()
	b.scale()
	b.processors()
	b.capacity()
	b.churn()
	b.storm()
	b.search()
	b.latency()
	b.cost()
	b.engines()
	b.environments()
	if opt.Compare[0] != "" {
		if err := b.compare(); err != nil {
			return nil, err
		}
	}
	b.footnotes()
	return b.rep, nil
}

// adoptUnknownCPUs moves the runs whose server processor count is unknown
// (no --server-cpus, no server figures) into the cell of the same step with
// the highest known count: an unrestricted server had the whole machine,
// and a run whose server could not be scraped should not vanish from the
// main tables.
func (b *builder) adoptUnknownCPUs() {
	top := map[stepKey]int{}
	for k := range b.docs {
		sk := stepKey{k.row, k.kind, k.step}
		top[sk] = max(top[sk], k.cpus)
	}
	for k, docs := range b.docs {
		if k.cpus != 0 {
			continue
		}
		n := top[stepKey{k.row, k.kind, k.step}]
		if n == 0 {
			continue
		}
		to := cellKey{k.row, k.kind, k.step, n}
		b.docs[to] = append(b.docs[to], docs...)
		slices.SortStableFunc(b.docs[to], runCompare)
		delete(b.docs, k)
	}
}

// runCompare orders runs: by Run, then start time, then anything that
// tells two documents apart, so that no order of the input shows through.
func runCompare(a, c *results.Document) int {
	return cmp.Or(
		cmp.Compare(a.Run, c.Run),
		a.Started.Compare(c.Started),
		a.TimedStart.Compare(c.TimedStart),
		cmp.Compare(a.RunID, c.RunID),
		cmp.Compare(a.Label, c.Label),
		cmp.Compare(a.Step, c.Step),
		cmp.Compare(a.Config.Rooms, c.Config.Rooms),
		cmp.Compare(a.Config.Users, c.Config.Users),
		cmp.Compare(a.Config.ServerCPUs, c.Config.ServerCPUs),
		cmp.Compare(a.Score, c.Score),
		cmp.Compare(a.Throughput, c.Throughput),
		cmp.Compare(a.Counts.Total, c.Counts.Total),
		boolCompare(a.Passed, c.Passed),
		boolCompare(a.Discarded, c.Discarded),
		cmp.Compare(a.Connections.Peak, c.Connections.Peak),
		cmp.Compare(a.ElapsedSeconds, c.ElapsedSeconds),
		cmp.Compare(a.Environment.Hostname, c.Environment.Hostname),
		cmp.Compare(strings.Join(a.CommandLine, " "), strings.Join(c.CommandLine, " ")),
	)
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func sortedKeys[K comparable, V any](m map[K]V, f func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, f)
	return keys
}

// kindOf says what scenario a document ran.
func kindOf(d *results.Document) string {
	switch {
	case d.Config.Scenario == results.ScenarioPrivate:
		return KindPrivate
	case d.Config.Scenario == results.ScenarioStorm || d.Storm != nil:
		return KindStorm
	case d.Config.Scenario == results.ScenarioPaced || d.Paced != nil:
		return KindPaced
	case d.Config.Scenario == results.ScenarioChurn || d.Churn != nil:
		return KindChurn
	}
	return KindTurns
}

// cpusOf is the server's processor count for d, 0 when unknown.
func cpusOf(d *results.Document) int {
	switch {
	case d.Config.ServerCPUs > 0:
		return d.Config.ServerCPUs
	case d.Server != nil && d.Server.GOMAXPROCS > 0:
		return d.Server.GOMAXPROCS
	case d.Server != nil && d.Server.CPUs > 0:
		return d.Server.CPUs
	}
	return 0
}

// stepOf is the connection count of a turn-taking run, the concurrent
// users of a paced one.
func stepOf(d *results.Document, kind string) int64 {
	if (kind == KindPaced || kind == KindPrivate || kind == KindStorm) && d.Paced != nil && d.Paced.ConcurrentUsers > 0 {
		return d.Paced.ConcurrentUsers
	}
	if kind == KindStorm && d.Storm != nil && d.Storm.Users > 0 {
		return d.Storm.Users
	}
	return int64(d.Config.Rooms) * int64(d.Config.Users)
}

func (b *builder) key(d *results.Document) cellKey {
	kind := kindOf(d)
	k := cellKey{kind: kind, step: stepOf(d, kind), cpus: cpusOf(d)}
	k.row = b.platformOf(d)
	if b.opt.By == ByCPUs && k.cpus > 0 {
		k.row += " (" + plural(k.cpus, "CPU") + ")"
	}
	return k
}

// nameOf is what names d's platform before engines: its server by server,
// else its label.
func (b *builder) nameOf(d *results.Document) string {
	if b.opt.By == ByServer {
		return serverName(d)
	}
	return labelOf(d)
}

// platformOf is d's platform: its name, followed by its engines when
// documents of that name differ by engines ("fast (serve epoll / load
// goroutine)"), so that runs differing only by engines are compared as
// platforms are; and by its publishers a room when not every user sent
// (load --publishers: "nats (1 publisher a room)"), a workload of its own
// that is not averaged with the others.
func (b *builder) platformOf(d *results.Document) string {
	name := b.nameOf(d)
	if e := d.Engines(); e != "" && b.split[name] {
		name += " (" + e + ")"
	}
	if p := d.Config.Publishers; p > 0 && p < d.Config.Users {
		name += " (" + plural(p, "publisher") + " a room)"
	}
	return name
}

// splitByEngines names the platform names whose documents have more than
// one engine pair (results.Document.Engines, unknown among them).
func splitByEngines(docs []*results.Document, nameOf func(*results.Document) string) map[string]bool {
	seen := map[string]map[string]bool{}
	for _, d := range docs {
		n := nameOf(d)
		if seen[n] == nil {
			seen[n] = map[string]bool{}
		}
		seen[n][d.Engines()] = true
	}
	split := map[string]bool{}
	for n, es := range seen {
		if len(es) > 1 {
			split[n] = true
		}
	}
	return split
}

func labelOf(d *results.Document) string {
	if d.Label == "" {
		return "(no label)"
	}
	return d.Label
}

// serverName names d's server for rows by server: its identity
// (results.ServerInfo.Name: product, version, engine, flags, labels) when
// the run recorded one, else the command that started it, else its
// address.
func serverName(d *results.Document) string {
	switch {
	case d.ServerInfo.Name() != "":
		return d.ServerInfo.Name()
	case len(d.Config.ServerCommand) > 0:
		return shellJoin(d.Config.ServerCommand)
	case d.Config.URL != "":
		return d.Config.URL
	case d.Config.Host != "" || d.Config.Port != 0:
		return d.Config.Host + ":" + strconv.Itoa(d.Config.Port)
	}
	return "(unknown server)"
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// rule is the run rule of the options.
func (b *builder) rule() results.RunRule {
	return results.RunRule{Discard: b.opt.Discard, Best: b.opt.Best, Of: b.opt.Of}
}

// counted applies the run rule's discard and "of" to runs in run order;
// all is every run after the discard (for comparisons). When the
// positional discard would leave nothing, the runs not marked Discarded
// are counted after all (see the package doc).
func (b *builder) counted(runs []*results.Document) (counted, all []*results.Document) {
	counted, all, _ = b.rule().Counted(runs)
	return counted, all
}

// cell applies the run rule to the runs of one cell.
func (b *builder) cell(k cellKey, runs []*results.Document) *Cell {
	c := &Cell{Kind: k.kind, Step: k.step, CPUs: k.cpus}
	counted, _, relaxed := b.rule().Counted(runs)
	if relaxed {
		b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf(
			"%s at %s: only %s, counted although --discard %d would drop it",
			k.row, stepName(k.kind, k.step), plural(len(counted), "run"), b.opt.Discard))
	}
	if len(counted) == 0 {
		c.Missing = true
		b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf(
			"%s at %s: every run is marked discarded", k.row, stepName(k.kind, k.step)))
		return c
	}
	bound := 0
	if w := retransmitWarning(counted); w != "" {
		b.rep.Warnings = append(b.rep.Warnings, k.row+" at "+stepName(k.kind, k.step)+": "+w)
	}
	for _, d := range counted {
		r := RunResult{Run: d.Run, RunID: d.RunID, Score: d.Score, Passed: results.RunPassed(d)}
		// Mark gives no score to a run under one second: the document's
		// score is 0 although the run passed. It must not count as a
		// score of 0.
		r.NoScore = r.Passed && !results.HasScore(d)
		r.ClientBound = clientBound(d)
		if r.ClientBound {
			bound++
		}
		// A failed run is cited; so is a passed one that recorded
		// failures anyway (the Volano Report's "1220a": errors, but the
		// test completed), and one without a score.
		if !r.Passed || len(d.Failures) > 0 {
			r.causes = append(r.causes, causeOf(d))
		}
		if r.NoScore {
			r.causes = append(r.causes, noScoreCause(d))
		}
		for _, cs := range r.causes {
			if !slices.Contains(c.causes, cs) {
				c.causes = append(c.causes, cs)
			}
		}
		c.Runs = append(c.Runs, r)
	}
	// Notes that are no failure: the row's reordering, the runs' warnings.
	for _, d := range counted {
		if reordered(d) {
			if cs, ok := b.reordered[k.row]; ok && !slices.Contains(c.causes, cs) {
				c.causes = append(c.causes, cs)
			}
		}
	}
	for _, d := range counted {
		for _, w := range d.Warnings {
			if cs := b.warningCause(w); !slices.Contains(c.causes, cs) {
				c.causes = append(c.causes, cs)
			}
		}
	}
	t := b.rule().Tally(counted)
	if t.Failed {
		c.Failed = true
		return c
	}
	if t.NoScore {
		// Enough runs passed, but too few have a score to average the
		// best of them: no score rather than the score of fewer runs.
		c.NoScore = true
		return c
	}
	c.ClientBound = 2*bound > len(counted)
	c.Min, c.Max, c.Median, c.Score = t.Min, t.Max, t.Median, t.Score
	return c
}

// causeOf is the failure a failed run is cited for: its earliest failure,
// else its most frequent one.
func causeOf(d *results.Document) cause {
	if len(d.Failures) == 0 {
		switch {
		case d.Interrupted:
			return cause{kind: kindInterrupted}
		case d.Paced != nil && d.Paced.Broken:
			return cause{kind: kindBroken, example: d.Paced.Reason}
		}
		return cause{kind: results.FailOther, example: "the run failed without a recorded cause"}
	}
	f, _ := d.FirstFailure()
	ex := f.Example
	if f.Kind == results.FailOpenFiles && d.Environment.OpenFilesSoft > 0 && !strings.Contains(ex, "limit") {
		ex += ", client limit " + strconv.FormatInt(d.Environment.OpenFilesSoft, 10)
	}
	return cause{kind: f.Kind, example: ex, server: f.Server}
}

// reordered reports whether d's receivers saw chats out of their room's
// order without that failing the run (no --strict-order: a strict run's
// reordering is a failure, cited as one).
func reordered(d *results.Document) bool {
	g := d.Integrity
	return g != nil && g.Reordered > 0 && !g.StrictOrder
}

// reorderNotes makes each row's note on reordering, from the counted runs
// of its turn-taking cells: the chats reordered, the share of receivers
// that saw any, the largest displacement. One note a row: the server's
// way of relaying, not a step's accident.
func (b *builder) reorderNotes(keys []cellKey) {
	type sum struct{ chats, receivers, saw, maxDisp int64 }
	sums := map[string]*sum{}
	for _, k := range keys {
		if k.kind != KindTurns {
			continue
		}
		counted, _ := b.counted(b.docs[k])
		for _, d := range counted {
			if !reordered(d) {
				continue
			}
			g := d.Integrity
			s := sums[k.row]
			if s == nil {
				s = &sum{}
				sums[k.row] = s
			}
			s.chats += g.Reordered
			s.receivers += g.Receivers
			s.saw += g.ReceiversReordered
			s.maxDisp = max(s.maxDisp, g.MaxDisplacement)
		}
	}
	for row, s := range sums {
		text := "Reordered: " + group(s.chats) + " " + pluralWord(s.chats, "chat")
		if s.receivers > 0 {
			text += " (" + strconv.FormatFloat(100*float64(s.saw)/float64(s.receivers), 'f', 1, 64) + "% of receivers)"
		}
		if s.maxDisp > 0 {
			text += ", largest displacement " + group(s.maxDisp)
		}
		text += ": chats of a room reached some receivers out of the room's order (the server relays a room from more than one thread); " +
			"not a failure without load --strict-order."
		b.reordered[row] = cause{kind: kindReordered, example: text}
	}
}

// maxWarningNotes bounds the distinct warnings made footnotes; the rest
// are listed under the report's warnings.
const maxWarningNotes = 8

// warningCause is the footnote of a run's warning. Warnings that differ
// only after their first ": " (the same failure with another address) share
// the note of the first one seen.
func (b *builder) warningCause(w string) cause {
	key, _, _ := strings.Cut(w, ": ")
	if cs, ok := b.warned[key]; ok {
		return cs
	}
	cs := cause{kind: kindWarning, example: w}
	if len(b.warned) >= maxWarningNotes {
		cs = cause{kind: kindWarning, example: "more warnings: see Warnings"}
		b.rep.Warnings = appendNew(b.rep.Warnings, "run warning: "+w)
	}
	b.warned[key] = cs
	return cs
}

// noScoreCause is why a passed run has no score: its timed phase lasted
// under one second (Mark's rule), else the document simply has none.
func noScoreCause(d *results.Document) cause {
	if d.ElapsedSeconds < 1 {
		return cause{kind: kindShort}
	}
	return cause{kind: kindNoScore}
}

// clientBound applies the rule of the package doc to one run: the client
// was measured to be the limit, its processors busy while the server's
// were not.
func clientBound(d *results.Document) bool {
	if d.ElapsedSeconds <= 0 || d.Environment.CPUs <= 0 {
		return false
	}
	client := (d.Client.CPUUserSeconds + d.Client.CPUSystemSeconds) / d.ElapsedSeconds
	room := float64(d.Environment.CPUs)
	if g := d.Environment.GOMAXPROCS; g > 0 && g < d.Environment.CPUs {
		room = float64(g)
	}
	if client < clientBusy*room {
		return false // the client had processors to spare
	}
	s := d.Server
	if s == nil || s.CPUPercent <= 0 {
		return true // nothing says the server was busy too
	}
	server := s.CPUPercent / 100
	if procs := cpusOf(d); procs > 0 && server >= clientBusy*float64(procs) {
		return false // the server was saturated as well
	}
	if sameMachine(d) && client+server >= clientBusy*float64(d.Environment.CPUs) {
		return false // one machine, full: the two shared the limit
	}
	return true
}

// clientBusy is the share of its processors past which a side counts as
// saturated.
const clientBusy = 0.9

// sameMachine reports whether the client and the server of d shared a
// machine: the client started the server, or reached it on loopback.
func sameMachine(d *results.Document) bool {
	if len(d.Config.ServerCommand) > 0 {
		return true
	}
	host := d.Config.Host
	if u, err := url.Parse(d.Config.URL); err == nil && d.Config.URL != "" {
		host = u.Hostname()
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mainCell is the cell a row shows at a step in the main tables.
func (b *builder) mainCell(row, kind string, step int64) *Cell {
	cpus, ok := b.main[stepKey{row, kind, step}]
	if !ok {
		return nil
	}
	return b.cells[cellKey{row, kind, step, cpus}]
}

// rowNames lists the rows in name order.
func (b *builder) rowNames() []string {
	return sortedKeys(b.rows, strings.Compare)
}

// steps lists the steps of a kind over all rows, ascending.
func (b *builder) steps(kind string) []int64 {
	set := map[int64]bool{}
	for k := range b.main {
		if k.kind == kind {
			set[k.step] = true
		}
	}
	return sortedKeys(set, cmp.Compare[int64])
}

// fast builds "Is it fast?" at the chosen step.
func (b *builder) fast() {
	steps := b.steps(KindTurns)
	if len(steps) == 0 {
		return
	}
	step := int64(b.opt.Step)
	if step == 0 {
		bestN := -1
		for _, s := range steps {
			n := 0
			for _, row := range b.rowNames() {
				if c := b.mainCell(row, KindTurns, s); c.HasScore() {
					n++
				}
			}
			better := n > bestN
			if n == bestN {
				ds, db := absInt(s-1000), absInt(step-1000)
				better = ds < db || (ds == db && s < step)
			}
			if better {
				bestN, step = n, s
			}
		}
	}
	if !slices.Contains(steps, step) {
		b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("\"Is it fast?\": no turn-taking runs at %d connections (there are runs at %s)",
			step, joinInts(steps)))
		return
	}
	t := &FastTable{Connections: step}
	for _, row := range b.rowNames() {
		c := b.mainCell(row, KindTurns, step)
		if c == nil || c.Missing {
			continue
		}
		t.Rows = append(t.Rows, FastRow{Platform: row, OS: osOf(b.rows[row][0]), Cell: c})
	}
	slices.SortStableFunc(t.Rows, func(x, y FastRow) int {
		return cmp.Or(boolCompare(!x.Cell.HasScore(), !y.Cell.HasScore()), boolCompare(x.Cell.Failed, y.Cell.Failed),
			-cmp.Compare(x.Cell.Score, y.Cell.Score),
			cmp.Compare(x.Platform, y.Platform))
	})
	if len(t.Rows) > 0 {
		b.rep.Fast = t
	}
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func osOf(d *results.Document) string {
	e := d.Environment
	s := e.Distribution
	if s == "" {
		s = e.OS
	}
	if e.Kernel != "" {
		s += ", kernel " + e.Kernel
	}
	return s
}

// order sets the report's row order: by "Is it fast?", then by name.
func (b *builder) order() {
	seen := map[string]bool{}
	if b.rep.Fast != nil {
		for _, r := range b.rep.Fast.Rows {
			b.rep.Platforms = append(b.rep.Platforms, r.Platform)
			seen[r.Platform] = true
		}
	}
	for _, row := range b.rowNames() {
		if !seen[row] {
			b.rep.Platforms = append(b.rep.Platforms, row)
		}
	}
}

// scale builds "Does it scale?" when turn-taking runs span two or more
// connection counts.
func (b *builder) scale() {
	steps := b.steps(KindTurns)
	if len(steps) < 2 {
		return
	}
	t := &ScaleTable{Columns: steps}
	for _, row := range b.rep.Platforms {
		sr := ScaleRow{Platform: row}
		failed, any := false, false
		for _, s := range steps {
			c := b.mainCell(row, KindTurns, s)
			if c == nil {
				c = &Cell{Kind: KindTurns, Step: s, Missing: true}
			}
			if c.Missing {
				c.AfterFailure = failed
			} else {
				any = true
			}
			if c.Failed {
				failed = true
			}
			sr.Cells = append(sr.Cells, c)
		}
		if !any {
			continue
		}
		sr.Limit = b.limit(row)
		t.Rows = append(t.Rows, sr)
	}
	b.rep.Scale = t
}

// limit is the row's Limit (see the package doc): the connections its
// turn-taking runs carried, exact when a failed run carried fewer than
// its step asked, "≥" when every step held, "~" (an estimate) when the
// steps only bracket the break.
func (b *builder) limit(row string) Limit {
	type stepRuns struct {
		step    int64
		passed  bool
		failed  []*results.Document
		carried int64
	}
	steps := map[int64]*stepRuns{}
	for _, d := range b.rows[row] {
		if kindOf(d) != KindTurns || superseded(d) {
			continue
		}
		st := stepOf(d, KindTurns)
		sr := steps[st]
		if sr == nil {
			sr = &stepRuns{step: st}
			steps[st] = sr
		}
		n := carried(d)
		sr.carried = max(sr.carried, n)
		switch {
		case d.Interrupted:
		case results.RunPassed(d):
			sr.passed = true
		default:
			sr.failed = append(sr.failed, d)
		}
	}
	order := sortedKeys(steps, cmp.Compare[int64])
	// held is the largest step a run passed; broke the smallest above it
	// that no run passed and some run failed.
	var held, broke *stepRuns
	for _, st := range order {
		if steps[st].passed {
			held = steps[st]
		}
	}
	for _, st := range order {
		sr := steps[st]
		if (held == nil || st > held.step) && !sr.passed && len(sr.failed) > 0 {
			broke = sr
			break
		}
	}
	if broke == nil {
		// Every step that failed has a larger one that passed, or none
		// failed: the most any run carried, and how that run ended.
		return b.heldLimit(row)
	}
	// The run that carried the most is cited.
	first, most := broke.failed[0], int64(-1)
	for _, d := range broke.failed {
		if n := carried(d); n > most {
			first, most = d, n
		}
	}
	l := Limit{Ended: "failed", causes: []cause{causeOf(first)}}
	lo := int64(0)
	if held != nil {
		lo = held.step
	}
	if n := broke.carried; n > 0 && n >= lo && n < broke.step {
		// The server carried n of the step's connections, then refused
		// the rest: the Limit itself (in a document without the count
		// of carried connections, the most it held at once).
		l.Connections = n
		return l
	}
	if held != nil {
		l.Connections, l.Estimate, l.Below = held.step, true, broke.step
		return l
	}
	l.Connections = broke.carried
	return l
}

// heldLimit is the most connections any turn-taking run of row held, and
// how that run ended.
func (b *builder) heldLimit(row string) Limit {
	var best *results.Document
	var bestN int64
	for _, d := range b.rows[row] {
		if kindOf(d) != KindTurns || superseded(d) {
			continue
		}
		n := carried(d)
		if best == nil || n > bestN || (n == bestN && d.Passed && !best.Passed) {
			best, bestN = d, n
		}
	}
	l := Limit{Connections: bestN}
	switch {
	case best == nil:
	case best.Interrupted:
		l.Ended = "interrupted"
	case best.Passed && (best.Paced == nil || !best.Paced.Broken):
		l.Ended = "passed"
	default:
		l.Ended = "failed"
		l.causes = []cause{causeOf(best)}
	}
	return l
}

// carried is the connections a run carried: Connections.Carried, or in
// an older document without it the most it held at once (Peak, else
// Established), which counts connections the server closed at once.
func carried(d *results.Document) int64 {
	c := d.Connections
	switch {
	case c.Carried != nil:
		return *c.Carried
	case c.Peak > 0:
		return c.Peak
	}
	return c.Established
}

// superseded reports whether a later try of --retry replaced d.
func superseded(d *results.Document) bool { return d.Retry != nil && d.Retry.Superseded }

func joinInts(xs []int64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ", ")
}

// retransmitThreshold is the percentage of TCP segments retransmitted past
// which a cell's runs get a warning: loopback loses nothing, so
// retransmissions there are the kernel's timers (see retransmitWarning).
const retransmitThreshold = 0.1

// retransmitWarning says how much the kernel retransmitted in the run of
// runs that retransmitted the largest share of its segments, if that
// share passes retransmitThreshold ("" otherwise).
func retransmitWarning(runs []*results.Document) string {
	var worst *results.TCPCounters
	share := 0.0
	for _, d := range runs {
		if s, ok := retransmittedPercent(d); ok && s > share {
			worst, share = d.TCP, s
		}
	}
	if worst == nil || share <= retransmitThreshold {
		return ""
	}
	return fmt.Sprintf("the kernel retransmitted %.2f%% of the TCP segments of a run (%s of %s; %s delayed ACKs, %s loss probes): "+
		"on loopback nothing is lost, so these are delayed ACKs outlasting the sender's loss probe (see the README, \"Delayed ACKs on loopback\")",
		share, group(worst.Retransmitted), group(worst.SegmentsOut), group(worst.DelayedACKs), group(worst.LossProbes))
}
