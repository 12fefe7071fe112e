package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Options configures Build. Zero Best, Of and By take their defaults;
// DefaultOptions is the whole Volano rule (Discard 1, best 2 of 3).
type Options struct {
	// Discard is how many runs of a cell are dropped first (1 in the
	// default run rule; 0 keeps them all; negative means 0).
	Discard int `json:"discard"`
	// Best and Of: the score is the average of the best Best of the first
	// Of counted runs (defaults 2 and 3, the Volano rule).
	Best int `json:"best"`
	Of   int `json:"of"`
	// By says what a row is: "label" (default), "server" or "cpus".
	By string `json:"by"`
	// Compare names two rows to compare metric by metric; empty strings
	// mean no comparison.
	Compare [2]string `json:"compare,omitzero"`
	// Format is the renderer the caller means to use; Build ignores it.
	Format string `json:"format,omitempty"`
	// Threshold, when set, is the gate of a comparison in percent: a
	// metric of the second platform (B, new) that is significantly worse
	// than the first's (A, old) by more than Threshold percent is a
	// regression (CompareRow.Regression, CompareTable.Regressions).
	Threshold *float64 `json:"threshold_percent,omitempty"`
	// Step is the connection count of the "Is it fast?" table; 0 chooses
	// the count at which the most rows have a score (ties: nearest to
	// 1000, Mark's default 50 rooms × 20 users, then the smaller).
	Step int `json:"step,omitempty"`
}

// DefaultBy is the default Options.By. The default run rule is
// results.DefaultRunRule.
const DefaultBy = ByLabel

// Values of Options.By.
const (
	ByLabel  = "label"
	ByServer = "server"
	ByCPUs   = "cpus"
)

// Kinds of run (Cell.Kind).
const (
	KindTurns = "turns"
	KindPaced = "paced"
	// KindPrivate is paced private chat (results.ScenarioPrivate).
	KindPrivate = "private"
	KindChurn   = "churn"
	KindStorm   = "storm"
)

// Report is what Build computed: every table, ready to render. Tables
// that the documents give nothing for are nil.
type Report struct {
	Options Options `json:"options"`
	// Platforms are the rows in report order: best "Is it fast?" score
	// first, then by name.
	Platforms  []string        `json:"platforms"`
	Fast       *FastTable      `json:"fast,omitempty"`
	Scale      *ScaleTable     `json:"scale,omitempty"`
	Latency    *LatencyTable   `json:"latency,omitempty"`
	Cost       *CostTable      `json:"cost,omitempty"`
	Engines    *EngineTable    `json:"engines,omitempty"`
	Capacity   *CapacityTable  `json:"capacity,omitempty"`
	Churn      *ChurnTable     `json:"churn,omitempty"`
	Storm      *StormTable     `json:"storm,omitempty"`
	Processors *ProcessorTable `json:"processors,omitempty"`
	Compare    *CompareTable   `json:"compare,omitempty"`
	Search     *SearchTable    `json:"search,omitempty"`
	// Footnotes are the distinct failure causes, lettered.
	Footnotes []Footnote `json:"footnotes,omitempty"`
	// ClientBound is true when any cell is marked client-bound.
	ClientBound  bool          `json:"client_bound,omitempty"`
	Environments []Environment `json:"environments"`
	// Documents is the number of documents after shards were merged.
	Documents int `json:"documents"`
	// Warnings are problems with the input that did not stop the report
	// (shards that could not be merged, undecodable histograms).
	Warnings []string `json:"warnings,omitempty"`
}

// RunResult is one counted run of a cell.
type RunResult struct {
	Run    int    `json:"run"`
	RunID  string `json:"run_id"`
	Score  int64  `json:"score"`
	Passed bool   `json:"passed"`
	// NoScore marks a passed turn-taking run without a score: its timed
	// phase lasted under one second, for which Mark gives no score.
	NoScore bool `json:"no_score,omitempty"`
	// Notes are the footnote letters of the run's failure.
	Notes       []string `json:"notes,omitempty"`
	ClientBound bool     `json:"client_bound,omitempty"`

	causes []cause
}

// Cell is the outcome of one platform at one step under the run rule.
type Cell struct {
	Kind string `json:"kind"`
	// Step is connections (turns) or concurrent users (paced).
	Step int64 `json:"step"`
	CPUs int   `json:"cpus,omitempty"`
	// Runs are the counted runs, in run order.
	Runs []RunResult `json:"runs"`
	// Score is the average of the best passed runs; 0 when Failed or
	// NoScore.
	Score  int64 `json:"score"`
	Failed bool  `json:"failed,omitempty"`
	// NoScore marks a cell that did not fail but has too few runs with a
	// score (runs under one second have none): it prints "----" and the
	// footnote letter that says why, never a score of 0.
	NoScore bool `json:"no_score,omitempty"`
	// Median, Min and Max are over the passed counted runs that have a
	// score.
	Median float64 `json:"median"`
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	// Notes are footnote letters: the failures in the cell's runs.
	Notes       []string `json:"notes,omitempty"`
	ClientBound bool     `json:"client_bound,omitempty"`
	// Missing marks a step the platform has no runs for; AfterFailure
	// says a lower step failed, so the cell prints "----".
	Missing      bool `json:"missing,omitempty"`
	AfterFailure bool `json:"after_failure,omitempty"`

	causes []cause
}

// HasScore reports whether the cell has a score to print.
func (c *Cell) HasScore() bool {
	return c != nil && !c.Missing && !c.Failed && !c.NoScore
}

// Text is the cell as the tables print it: "2,206", "----a", "1,218a*", "".
func (c *Cell) Text() string { return c.text(group) }

// RawText is Text without thousands separators, for CSV.
func (c *Cell) RawText() string {
	return c.text(func(n int64) string { return strconv.FormatInt(n, 10) })
}

func (c *Cell) text(num func(int64) string) string {
	if c == nil || c.Missing {
		if c != nil && c.AfterFailure {
			return "----"
		}
		return ""
	}
	var b strings.Builder
	if c.HasScore() {
		b.WriteString(num(c.Score))
	} else {
		b.WriteString("----")
	}
	b.WriteString(strings.Join(c.Notes, ""))
	if c.ClientBound && c.HasScore() {
		b.WriteString("*")
	}
	return b.String()
}

// ResultsText lists the counted results as the Volano Report did, but
// separated by semicolons, the commas being thousands separators:
// "1,897; 1,900; 1,893" with footnote letters after failed runs.
func (c *Cell) ResultsText() string {
	parts := make([]string, 0, len(c.Runs))
	for _, r := range c.Runs {
		s := "----"
		if r.Passed && !r.NoScore {
			s = group(r.Score)
		}
		parts = append(parts, s+strings.Join(r.Notes, ""))
	}
	return strings.Join(parts, "; ")
}

// SpreadText is "min–max" of the passed counted runs, or "".
func (c *Cell) SpreadText() string {
	if !c.HasScore() || c.Max == 0 {
		return ""
	}
	return group(c.Min) + "–" + group(c.Max)
}

// FastTable is "Is it fast?": one row per platform at one step.
type FastTable struct {
	// Connections is the step the table compares.
	Connections int64     `json:"connections"`
	Rows        []FastRow `json:"rows"`
}

// FastRow is one platform in "Is it fast?".
type FastRow struct {
	Platform string `json:"platform"`
	// OS is the client machine's distribution or OS and kernel.
	OS   string `json:"os"`
	Cell *Cell  `json:"cell"`
}

// ScaleTable is "Does it scale?": platforms × connection counts.
type ScaleTable struct {
	Columns []int64    `json:"columns"`
	Rows    []ScaleRow `json:"rows"`
}

// ScaleRow is one platform across the connection counts.
type ScaleRow struct {
	Platform string `json:"platform"`
	// Cells has one entry per column.
	Cells []*Cell `json:"cells"`
	Limit Limit   `json:"limit"`
}

// Limit is the most connections a platform carried (see the package
// doc).
type Limit struct {
	Connections int64 `json:"connections"`
	// Ended is "passed", "failed" or "interrupted": how the run that
	// held them ended.
	Ended string `json:"ended"`
	// Estimate marks a Limit the steps only bracket: Connections held and
	// Below (the next step) failed, with every connection carried, so the
	// break lies between them ("~ 1,500", as the Volano Report printed).
	Estimate bool     `json:"estimate,omitempty"`
	Below    int64    `json:"below,omitempty"`
	Notes    []string `json:"notes,omitempty"`

	causes []cause
}

// Text prints a limit: "≥ 2100" when it passed, "1479a" when it failed,
// "~ 1500a" when the steps bracket it.
func (l Limit) Text() string {
	if l.Connections == 0 {
		return ""
	}
	n := group(l.Connections)
	if l.Estimate {
		return "~ " + n + strings.Join(l.Notes, "")
	}
	switch l.Ended {
	case "passed":
		return "≥ " + n
	case "interrupted":
		return n + " (stopped)"
	}
	return n + strings.Join(l.Notes, "")
}

// LatencyTable holds delivery latency percentiles, merged over the counted
// runs of each cell from their HDR histograms. Values are nanoseconds.
type LatencyTable struct {
	Rows []LatencyRow `json:"rows"`
}

// LatencyRow is one platform at one step.
type LatencyRow struct {
	Platform string `json:"platform"`
	Kind     string `json:"kind"`
	Step     int64  `json:"step"`
	// Histogram is the name of the histogram used (results.Latency*).
	Histogram string `json:"histogram"`
	Count     int64  `json:"count"`
	P50       int64  `json:"p50_ns"`
	P99       int64  `json:"p99_ns"`
	P999      int64  `json:"p999_ns"`
	Max       int64  `json:"max_ns"`
	// FanoutFirst, FanoutLast and FanoutSpread are the fan-out of a
	// broadcast (results.LatencyFanout*): from the send of a chat to its
	// first and to its last receiver, and the time between the two,
	// merged as delivery latency is; nil when the runs have none.
	FanoutFirst  *Times `json:"fanout_first,omitempty"`
	FanoutLast   *Times `json:"fanout_last,omitempty"`
	FanoutSpread *Times `json:"fanout_spread,omitempty"`
	// GC is the server's garbage-collector pauses in the counted runs,
	// when its metrics have them.
	GC *GCPauses `json:"gc_pauses,omitempty"`
}

// Times are percentiles of a merged histogram of times, ns.
type Times struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_ns"`
	P99   int64 `json:"p99_ns"`
	P999  int64 `json:"p999_ns"`
	Max   int64 `json:"max_ns"`
}

// HasFanout reports whether the row has any fan-out figure.
func (r *LatencyRow) HasFanout() bool {
	return r.FanoutFirst != nil || r.FanoutLast != nil || r.FanoutSpread != nil
}

// StormTable is the reconnect-storm test, one block per platform: how
// long the users took to come back after dropping at once, what was lost
// meanwhile, and what the server kept afterwards.
type StormTable struct {
	Rows []StormRow `json:"rows"`
}

// StormRow is one platform's storm runs.
type StormRow struct {
	Platform string      `json:"platform"`
	Steps    []StormStep `json:"steps"`
}

// StormStep is one storm step: medians over its counted runs, the
// reconnect times merged from their histograms, the loss the most any
// counted run had, the leaks the most after any run.
type StormStep struct {
	// Users are the users of the run; Dropped, Reconnected and Recovered
	// how many dropped, came back and had a chat after their return.
	Users       int64 `json:"users"`
	Runs        int   `json:"runs"`
	Dropped     int64 `json:"dropped"`
	Reconnected int64 `json:"reconnected"`
	Recovered   int64 `json:"recovered"`
	// Attempts are the connection attempts of the reconnections.
	Attempts int64 `json:"attempts"`
	// RecoverySeconds is the median time to recovery of the counted runs
	// in which every dropped user recovered (nil when none did);
	// NeverRecovered counts the runs in which some never did.
	RecoverySeconds *float64 `json:"recovery_seconds,omitempty"`
	NeverRecovered  int      `json:"never_recovered,omitempty"`
	// Reconnect is the time from a user's drop to its return.
	Reconnect *Times `json:"reconnect,omitempty"`
	// Lost is the most chats any counted run lost (Integrity.Lost);
	// MissedSends the median of the chats the dropped users did not send.
	Lost        int64 `json:"lost"`
	MissedSends int64 `json:"missed_sends"`
	// Leaked* are as in ChurnStep.
	LeakedConnections *int64   `json:"leaked_connections,omitempty"`
	LeakedGoroutines  *int64   `json:"leaked_goroutines,omitempty"`
	LeakedFDs         *int64   `json:"leaked_fds,omitempty"`
	Failed            bool     `json:"failed,omitempty"`
	Notes             []string `json:"notes,omitempty"`

	causes []cause
}

// CostTable is what a message costs: CPU per message of the server and
// the client, and the kernel's TCP timers per message, medians over the
// passed counted runs of each main cell (turn-taking and paced).
type CostTable struct {
	Rows []CostRow `json:"rows"`
}

// CostRow is one platform at one step. A nil figure is unknown: no
// counted run that passed had it.
type CostRow struct {
	Platform string `json:"platform"`
	Kind     string `json:"kind"`
	Step     int64  `json:"step"`
	// ServerMicros and ClientMicros are CPU per message, µs
	// (Server.CPUPerMessageMicros, Client.CPUPerMessageMicros).
	ServerMicros *float64 `json:"server_cpu_per_message_us,omitempty"`
	ClientMicros *float64 `json:"client_cpu_per_message_us,omitempty"`
	// DelayedACKsPerMessage is TCP.DelayedACKs / Counts.Total.
	DelayedACKsPerMessage *float64 `json:"delayed_acks_per_message,omitempty"`
	// RetransmittedPercent is 100 × TCP.Retransmitted / TCP.SegmentsOut.
	RetransmittedPercent *float64 `json:"retransmitted_percent,omitempty"`
	// EfficiencyServer and EfficiencyClient are the machine's kernel floor
	// ÷ the CPU per message of each side (results.Efficiency), for
	// documents that carry a floor (load --floor).
	EfficiencyServer *float64 `json:"efficiency_server,omitempty"`
	EfficiencyClient *float64 `json:"efficiency_client,omitempty"`
}

// CapacityTable is the paced (open-loop) capacity test, one block per
// platform, as a game-server vendor publishes it.
type CapacityTable struct {
	Rows []CapacityRow `json:"rows"`
}

// CapacityRow is one platform's paced sweep.
type CapacityRow struct {
	Platform string `json:"platform"`
	// Kind is KindPaced (broadcast in rooms) or KindPrivate (private chat
	// in pairs, the platform named "... (private chat)").
	Kind  string         `json:"kind"`
	Steps []CapacityStep `json:"steps"`
	// Held is the largest step below the first that broke (every step when
	// none broke): the capacity the sweep shows.
	Held int64 `json:"held"`
	// BrokeAt is the first step that broke (0 if none), and Reason why.
	BrokeAt int64  `json:"broke_at,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// SLOSeconds is the latency objective of the sweep (Config.SLOSeconds,
	// the largest of its runs), 0 when unknown.
	SLOSeconds float64 `json:"slo_seconds,omitempty"`
}

// CapacityStep is one paced step, the median over its counted runs.
type CapacityStep struct {
	Users        int64   `json:"concurrent_users"`
	PauseSeconds float64 `json:"pause_seconds"`
	InPerSecond  float64 `json:"in_per_second"`
	OutPerSecond float64 `json:"out_per_second"`
	// ServerCPUPercent is 100 per processor; -1 when unknown.
	ServerCPUPercent float64 `json:"server_cpu_percent"`
	// P99 of delivery latency from the scheduled send, ns; 0 if unknown.
	P99         int64    `json:"p99_ns"`
	Broken      bool     `json:"broken,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	ClientBound bool     `json:"client_bound,omitempty"`
	Runs        int      `json:"runs"`

	causes []cause
}

// ChurnTable is the connection-churn test, one block per platform: how
// fast a server takes users in and out, the time of a user's first (cold)
// sequence against the later (warm) ones, and what the server still held
// afterwards.
type ChurnTable struct {
	Rows []ChurnRow `json:"rows"`
}

// ChurnRow is one platform's churn runs.
type ChurnRow struct {
	Platform string      `json:"platform"`
	Steps    []ChurnStep `json:"steps"`
}

// ChurnStep is one churn step: medians over its counted runs, latency
// merged from their histograms, leaks the most seen after any of its runs.
type ChurnStep struct {
	// Users are the users churning at once (rooms × users).
	Users int64 `json:"users"`
	// SequencesPerUser is the -count of the runs (0 when unknown).
	SequencesPerUser int `json:"sequences_per_user,omitempty"`
	// Runs is the number of counted runs.
	Runs               int     `json:"runs"`
	Sequences          int64   `json:"sequences"`
	SequencesPerSecond float64 `json:"sequences_per_second"`
	// Cold is each user's first sequence (Churn.First), Warm the rest
	// (Latency["sequence"]); nanoseconds, nil when the runs have none.
	Cold *SequenceTimes `json:"cold,omitempty"`
	Warm *SequenceTimes `json:"warm,omitempty"`
	// LeakedConnections, LeakedGoroutines and LeakedFDs are the most any
	// run of the step left behind on the server (after the run against
	// before it, discarded runs included); nil when the server did not
	// expose the figure.
	LeakedConnections *int64 `json:"leaked_connections,omitempty"`
	LeakedGoroutines  *int64 `json:"leaked_goroutines,omitempty"`
	LeakedFDs         *int64 `json:"leaked_fds,omitempty"`
	// Failed is set when fewer counted runs passed than the run rule
	// needs; Notes are the footnote letters of failed runs or of passed
	// runs that recorded failures.
	Failed bool     `json:"failed,omitempty"`
	Notes  []string `json:"notes,omitempty"`

	causes []cause
}

// SequenceTimes are percentiles of the time of a churn sequence, ns.
type SequenceTimes struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_ns"`
	P99   int64 `json:"p99_ns"`
	Max   int64 `json:"max_ns"`
}

// ColdWarm is the cold p50 over the warm p50 (0 when either is unknown).
func (s *ChurnStep) ColdWarm() float64 {
	if s.Cold == nil || s.Warm == nil || s.Cold.P50 <= 0 || s.Warm.P50 <= 0 {
		return 0
	}
	return float64(s.Cold.P50) / float64(s.Warm.P50)
}

// Leaked reports whether any known leak figure is above zero.
func (s *ChurnStep) Leaked() bool {
	for _, p := range []*int64{s.LeakedConnections, s.LeakedGoroutines, s.LeakedFDs} {
		if p != nil && *p > 0 {
			return true
		}
	}
	return false
}

// ProcessorTable is processor scalability: the score at each processor
// count and the gain of each added processor.
type ProcessorTable struct {
	Columns []int          `json:"columns"`
	Rows    []ProcessorRow `json:"rows"`
}

// ProcessorRow is one platform at one step across processor counts.
type ProcessorRow struct {
	Platform    string `json:"platform"`
	Connections int64  `json:"connections"`
	// Cells has one entry per column (nil when not measured).
	Cells []*ProcessorCell `json:"cells"`
}

// ProcessorCell is the score at one processor count.
type ProcessorCell struct {
	CPUs int   `json:"cpus"`
	Cell *Cell `json:"cell"`
	// GainPercent is the gain per added processor over the next lower
	// count measured (see the package doc); nil for the first count or
	// when either score is missing.
	GainPercent *float64 `json:"gain_percent,omitempty"`
}

// Text prints "1,648 (83%)".
func (p *ProcessorCell) Text() string {
	if p == nil {
		return ""
	}
	s := p.Cell.Text()
	if p.GainPercent != nil {
		s += " (" + strconv.FormatFloat(*p.GainPercent, 'f', 0, 64) + "%)"
	}
	return s
}

// CompareTable sets two platforms side by side, metric by metric.
type CompareTable struct {
	A    string       `json:"a"`
	B    string       `json:"b"`
	Rows []CompareRow `json:"rows"`
	// Alpha is the significance level.
	Alpha float64 `json:"alpha"`
	// Warnings are the statistics' caveats, each once; runs too few for
	// any difference to be significant are said there ("With 3 runs of A
	// and 3 of B ...").
	Warnings []string `json:"warnings,omitempty"`
	// Threshold is Options.Threshold (percent), nil without a gate.
	Threshold *float64 `json:"threshold_percent,omitempty"`
}

// Regressions are the rows in which B is significantly worse than A by
// more than the threshold (none without a threshold).
func (t *CompareTable) Regressions() []CompareRow {
	var out []CompareRow
	for _, r := range t.Rows {
		if r.Regression {
			out = append(out, r)
		}
	}
	return out
}

// Powerless reports whether no row could show a significant difference:
// every row has too few runs (CompareRow.Powerless).
func (t *CompareTable) Powerless() bool {
	for _, r := range t.Rows {
		if !r.Powerless {
			return false
		}
	}
	return len(t.Rows) > 0
}

// CompareRow is one metric at one step.
type CompareRow struct {
	Kind   string `json:"kind"`
	Step   int64  `json:"step"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// A and B are the medians of the runs.
	A  float64 `json:"a"`
	B  float64 `json:"b"`
	NA int     `json:"n_a"`
	NB int     `json:"n_b"`
	// Ratio is B / A (0 when A is 0).
	Ratio float64 `json:"ratio"`
	// Delta is "~" when not significant, else the change from A to B in
	// percent ("+12.34%").
	Delta string `json:"delta"`
	// P is the Mann–Whitney U p-value (-1 when not computed).
	P float64 `json:"p"`
	// MinP is the smallest p-value the test can give with NA and NB runs
	// (all of one side above all of the other): 2 / C(NA+NB, NA).
	MinP float64 `json:"min_p"`
	// Powerless marks a row whose runs are too few for any difference to
	// be significant: MinP is above Alpha (3 runs a side: 0.1 > 0.05).
	Powerless bool `json:"powerless,omitempty"`
	// Better says which side is better when significant: "A", "B" or "".
	Better string `json:"better,omitempty"`
	// Change is the change from A to B in percent ((B−A)/A × 100; 0 when
	// A is 0).
	Change float64 `json:"change_percent"`
	// Regression is set, under a threshold, when B is significantly worse
	// than A by more than the threshold.
	Regression bool `json:"regression,omitempty"`
}

// Footnote is one distinct failure cause.
type Footnote struct {
	Letter  string `json:"letter"`
	Kind    string `json:"kind"`
	Example string `json:"example"`
	// Text is the footnote as printed.
	Text string `json:"text"`
	// Where lists the cells that cite it ("java17-volano 1500").
	Where []string `json:"where"`
}

// Environment is what a platform ran on and how it was started.
type Environment struct {
	Platform string `json:"platform"`
	// Client machine.
	Hostname       string `json:"hostname,omitempty"`
	OS             string `json:"os"`
	Kernel         string `json:"kernel,omitempty"`
	CPU            string `json:"cpu"`
	CPUs           int    `json:"cpus"`
	MemoryBytes    int64  `json:"memory_bytes"`
	GoVersion      string `json:"go_version,omitempty"`
	GOMAXPROCS     int    `json:"gomaxprocs,omitempty"`
	OpenFilesSoft  int64  `json:"open_files_soft,omitempty"`
	OpenFilesHard  int64  `json:"open_files_hard,omitempty"`
	EphemeralPorts string `json:"ephemeral_ports,omitempty"`
	// TCPCongestion and LoopbackQuickACK are the client machine's TCP
	// settings (results.Environment).
	TCPCongestion    string `json:"tcp_congestion,omitempty"`
	LoopbackQuickACK bool   `json:"loopback_quickack,omitempty"`
	// Transports are the transports used ("tcp", "ws").
	Transports []string `json:"transports,omitempty"`
	// Server describes what is known of the server: its processors,
	// GOMAXPROCS and where its resource figures came from.
	Server []string `json:"server,omitempty"`
	// Engines are the distinct engine pairs of its runs ("serve epoll /
	// load goroutine", results.Document.Engines), as far as known.
	Engines []string `json:"engines,omitempty"`
	// Servers are the distinct identities of the server its runs
	// recorded (results.ServerInfo.Name: product, version, engine, flags,
	// labels).
	Servers []string `json:"servers,omitempty"`
	// ServerMachine is the server's machine and runtime as the server
	// said it (results.ServerInfo.Environment) in the platform's first run
	// that has it, shown beside the client's; nil when none has it.
	// ServerMachines counts the distinct server hostnames.
	ServerMachine  *Machine `json:"server_machine,omitempty"`
	ServerMachines int      `json:"server_machines,omitempty"`
	// Network lists the distinct paths to the server its runs measured,
	// a line each: the round trip and how, the interface and its speed
	// (results.Network); runs over one path share its line, the median of
	// their round trips with the range.
	Network []string `json:"network,omitempty"`
	// ServerCommands are the distinct commands that started the server.
	ServerCommands []string `json:"server_commands,omitempty"`
	// Tools are the distinct volanogo builds that wrote the documents.
	Tools []string `json:"tools"`
	// CommandLines are the distinct client command lines; the lines of a
	// sweep that differ in one argument only are one, with N for it.
	CommandLines []CommandLine `json:"command_lines"`
	// Runs is the number of documents of the platform (shards merged).
	Runs int `json:"runs"`
	// Sharded is how many of them were merged from shards, and Shards
	// from how many shard documents.
	Sharded int `json:"sharded,omitempty"`
	Shards  int `json:"shards,omitempty"`
	// Machines is how many distinct client machines (hostnames) ran it.
	Machines int `json:"machines"`
}

// Machine is a machine and runtime: the server's, as it said it.
type Machine struct {
	Hostname      string `json:"hostname,omitempty"`
	OS            string `json:"os"`
	Kernel        string `json:"kernel,omitempty"`
	CPU           string `json:"cpu"`
	CPUs          int    `json:"cpus"`
	MemoryBytes   int64  `json:"memory_bytes"`
	GoVersion     string `json:"go_version,omitempty"`
	GOMAXPROCS    int    `json:"gomaxprocs,omitempty"`
	OpenFilesSoft int64  `json:"open_files_soft,omitempty"`
	OpenFilesHard int64  `json:"open_files_hard,omitempty"`
	TCPCongestion string `json:"tcp_congestion,omitempty"`
}

// CommandLine is a client command line as a shell reads it. When N is set,
// the line stands for one line per value of N, "N" in Command standing for
// the value. When Vars is set, the line stands for lines that differ in
// several arguments, each named in Command by its variable (the flag before
// it upper-cased: "-rooms ROOMS"), the values of line i being the i-th of
// each variable's.
type CommandLine struct {
	Command string        `json:"command"`
	N       []string      `json:"n,omitempty"`
	Vars    []CommandVars `json:"vars,omitempty"`
}

// CommandVars is one variable of a collapsed command line and its value in
// each of the lines it stands for.
type CommandVars struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Values is "N = 15, 30, 45", "ROOMS = 15, 475; RUN-ID = r1, …, r6 (6
// values)" or "".
func (c CommandLine) Values() string {
	if len(c.N) > 0 {
		return "N = " + strings.Join(c.N, ", ")
	}
	parts := make([]string, 0, len(c.Vars))
	for _, v := range c.Vars {
		parts = append(parts, v.Name+" = "+summarizeValues(v.Values))
	}
	return strings.Join(parts, "; ")
}

// summarizeValues lists the distinct values in order of first appearance,
// or, when there are more than four, the first, an ellipsis, the last and
// how many.
func summarizeValues(vals []string) string {
	var distinct []string
	seen := map[string]bool{}
	for _, v := range vals {
		if !seen[v] {
			seen[v] = true
			distinct = append(distinct, v)
		}
	}
	if len(distinct) <= 4 {
		return strings.Join(distinct, ", ")
	}
	return fmt.Sprintf("%s, …, %s (%d values)", distinct[0], distinct[len(distinct)-1], len(distinct))
}

// Text is the command line followed by the values of its variables.
func (c CommandLine) Text() string {
	v := c.Values()
	if v == "" {
		return c.Command
	}
	return c.Command + "   (" + v + ")"
}
