package report

import (
	"strconv"

	"github.com/volanogo/volanogo/internal/results"
)

// EngineTable compares engines as the Volano Report compares platforms:
// at each connection count of turn-taking runs, each platform that
// recorded its engines, with them (the server's, as it said, and the client's), its score, its
// messages per second and what a message cost each side, with the
// efficiency to the machine's floor when the documents carry one, and
// the server's memory per connection. Built when the platforms have two
// engine pairs or more.
type EngineTable struct {
	Rows []EngineRow `json:"rows"`
}

// EngineRow is one platform at one connection count. A nil figure is
// unknown: no counted run that passed had it.
type EngineRow struct {
	Step     int64  `json:"step"`
	Platform string `json:"platform"`
	// Server and Client are the engines ("" unknown).
	Server string `json:"server_engine,omitempty"`
	Client string `json:"client_engine,omitempty"`
	// Cell is the platform's main cell at the step (its score).
	Cell *Cell `json:"cell"`
	// Throughput is the median messages per second of the passed counted
	// runs (results.Document.Throughput).
	Throughput *float64 `json:"msgs_per_sec,omitempty"`
	// ServerMicros, ClientMicros, EfficiencyServer and EfficiencyClient
	// are as in CostRow.
	ServerMicros     *float64 `json:"server_cpu_per_message_us,omitempty"`
	ClientMicros     *float64 `json:"client_cpu_per_message_us,omitempty"`
	EfficiencyServer *float64 `json:"efficiency_server,omitempty"`
	EfficiencyClient *float64 `json:"efficiency_client,omitempty"`
	// MemoryPerConnection is the median of the server's resident memory
	// growth per connection, bytes (results.Document.ServerMemoryPerConnection).
	MemoryPerConnection *float64 `json:"server_memory_per_connection_bytes,omitempty"`
}

// engines builds the engine table when the platforms' documents have two
// engine pairs or more.
func (b *builder) engines() {
	pairs := map[string]bool{}
	known := map[string]bool{} // platforms with engines
	for _, row := range b.rep.Platforms {
		for _, d := range b.rows[row] {
			if e := d.Engines(); e != "" {
				pairs[e] = true
				known[row] = true
			}
		}
	}
	if len(pairs) < 2 {
		return
	}
	t := &EngineTable{}
	for _, step := range b.steps(KindTurns) {
		for _, row := range b.rep.Platforms {
			c := b.mainCell(row, KindTurns, step)
			if c == nil || c.Missing || !known[row] {
				continue
			}
			counted, _ := b.counted(b.docs[cellKey{row, KindTurns, step, c.CPUs}])
			r := EngineRow{Step: step, Platform: row, Cell: c,
				Throughput:          medianOf(counted, ifPassed(throughput)),
				ServerMicros:        medianOf(counted, ifPassed(serverCPUPerMessage)),
				ClientMicros:        medianOf(counted, ifPassed(clientCPUPerMessage)),
				EfficiencyServer:    medianOf(counted, ifPassed(efficiencyServer)),
				EfficiencyClient:    medianOf(counted, ifPassed(efficiencyClient)),
				MemoryPerConnection: medianOf(counted, ifPassed((*results.Document).ServerMemoryPerConnection)),
			}
			for _, d := range counted {
				if r.Server == "" && d.Server != nil {
					r.Server = d.Server.Engine
				}
				if r.Client == "" {
					r.Client = d.Config.ClientEngine
				}
			}
			t.Rows = append(t.Rows, r)
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Engines = t
	}
}

func throughput(d *results.Document) (float64, bool) { return d.Throughput, d.Throughput > 0 }

// engineIntro introduces the engine table.
const engineIntro = "Engines compared as platforms: at each connection count, the engine that served the chat connections " +
	"(as the server said) and the one that loaded them (volanogo load --engine), with the score under the run rule, the median messages " +
	"per second and CPU per message of the passed counted runs, and the server's resident memory growth per connection " +
	"(from before the run's connections to its timed phase)."

// engineIntroOf is the intro of the engine table t.
func engineIntroOf(t *EngineTable) string {
	if t != nil && t.hasEfficiency() {
		return engineIntro + " Efficiency (server / client) is the machine's kernel floor divided by the CPU per message of each side, as in the cost table."
	}
	return engineIntro
}

func (t *EngineTable) hasEfficiency() bool {
	for _, r := range t.Rows {
		if r.EfficiencyServer != nil || r.EfficiencyClient != nil {
			return true
		}
	}
	return false
}

func (t *EngineTable) hasMemory() bool {
	for _, r := range t.Rows {
		if r.MemoryPerConnection != nil {
			return true
		}
	}
	return false
}

// hasPlatform reports whether t needs its platform column: two rows of
// one step have the same engines (platforms of other names, other
// machines).
func (t *EngineTable) hasPlatform() bool {
	seen := map[[3]string]bool{}
	for _, r := range t.Rows {
		k := [3]string{strconv.FormatInt(r.Step, 10), r.Server, r.Client}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// engineColumns are the columns of the engine table t, every format
// alike: the first three identify a row; the platform comes last when
// they do not suffice.
func engineColumns(t *EngineTable) []string {
	cols := []string{"Connections", "Server", "Client", "Score", "msg/s", "Server CPU", "Client CPU"}
	if t.hasEfficiency() {
		cols = append(cols, "Efficiency")
	}
	if t.hasMemory() {
		cols = append(cols, "Memory/conn")
	}
	if t.hasPlatform() {
		cols = append(cols, "Platform")
	}
	return cols
}

// engineNumeric reports whether column i of the engine table t holds
// figures (aligned right).
func engineNumeric(t *EngineTable, i int) bool {
	return i >= 3 && (i < len(engineColumns(t))-1 || !t.hasPlatform())
}

// engineCells is one row of the engine table t; "–" for an unknown
// figure.
func engineCells(t *EngineTable, r EngineRow) []string {
	f := func(v *float64, unit string) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64) + unit
	}
	or := func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	}
	rate := "–"
	if r.Throughput != nil {
		rate = fmtRate(*r.Throughput)
	}
	cells := []string{group(r.Step), or(r.Server), or(r.Client), or(r.Cell.Text()), rate,
		f(r.ServerMicros, " µs"), f(r.ClientMicros, " µs")}
	if t.hasEfficiency() {
		cells = append(cells, f(r.EfficiencyServer, "")+" / "+f(r.EfficiencyClient, ""))
	}
	if t.hasMemory() {
		m := "–"
		if r.MemoryPerConnection != nil {
			m = strconv.FormatFloat(*r.MemoryPerConnection/1024, 'f', 1, 64) + " KiB"
		}
		cells = append(cells, m)
	}
	if t.hasPlatform() {
		cells = append(cells, r.Platform)
	}
	return cells
}
