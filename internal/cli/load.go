package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

func init() { register(newLoadCmd) }

// runCampaign is the engine; tests replace it.
var runCampaign = campaign.Run

// checkTarget is the check of the server before any run (preflight);
// tests with a fake engine replace it.
var checkTarget = preflight

// markInt is an integer option of Mark's: a bad value is kept and refused
// after parsing with Mark's message ("-rooms: value is not an integer
// (abc)") so that it exits 2 with the usage.
type markInt struct {
	v   int
	bad string
	set bool
}

func (m *markInt) String() string { return strconv.Itoa(m.v) }
func (m *markInt) Type() string   { return "int" }
func (m *markInt) Set(s string) error {
	m.set = true
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		m.bad = s
		return nil
	}
	m.v, m.bad = v, ""
	return nil
}

// roomsValue is -rooms: one number, or a list of steps "15,30,45".
type roomsValue struct {
	steps []int
	bad   string
	set   bool
}

func (r *roomsValue) String() string {
	s := make([]string, len(r.steps))
	for i, v := range r.steps {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}
func (r *roomsValue) Type() string { return "int[,int...]" }
func (r *roomsValue) Set(s string) error {
	r.set = true
	var steps []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			r.bad = s
			return nil
		}
		steps = append(steps, v)
	}
	r.steps, r.bad = steps, ""
	return nil
}

// pauseValue is -pause: a whole number of seconds as in Mark, or a Go
// duration ("250ms").
type pauseValue struct {
	d   time.Duration
	bad string
}

func (p *pauseValue) String() string {
	if p.d%time.Second == 0 {
		return strconv.FormatInt(int64(p.d/time.Second), 10)
	}
	return p.d.String()
}
func (p *pauseValue) Type() string { return "seconds|duration" }
func (p *pauseValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if v, err := strconv.Atoi(s); err == nil {
		p.d, p.bad = time.Duration(v)*time.Second, ""
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.bad = s
		return nil
	}
	p.d, p.bad = d, ""
	return nil
}

// sloValue is --slo: a p99 delivery latency, as a duration ("1s") or as
// objectives "p99=50ms,loss=0" (loss must be 0: a lost chat fails a run
// whatever the SLO).
type sloValue struct {
	d   time.Duration
	set bool
}

func (v *sloValue) String() string { return v.d.String() }
func (v *sloValue) Type() string   { return "p99=duration[,loss=0]" }
func (v *sloValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		v.d, v.set = d, true
		return nil
	}
	var p99 time.Duration
	for _, part := range strings.Split(s, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
			return fmt.Errorf("%q is not a duration or KEY=VALUE (p99=50ms, loss=0)", part)
		case k == "p99":
			d, err := time.ParseDuration(strings.TrimSpace(val))
			if err != nil || d <= 0 {
				return fmt.Errorf("p99: %q is not a positive duration", val)
			}
			p99 = d
		case k == "loss":
			if strings.TrimSpace(val) != "0" && strings.TrimSpace(val) != "0%" {
				return fmt.Errorf("loss: only 0 (a lost chat fails a run whatever the SLO)")
			}
		default:
			return fmt.Errorf("%q: the objectives are p99 and loss", k)
		}
	}
	if p99 == 0 {
		return fmt.Errorf("%q names no p99", s)
	}
	v.d, v.set = p99, true
	return nil
}

// rangeValue is --find-limit LO..HI, in rooms.
type rangeValue struct{ lo, hi int }

func (v *rangeValue) String() string {
	if v.hi == 0 {
		return ""
	}
	return strconv.Itoa(v.lo) + ".." + strconv.Itoa(v.hi)
}
func (v *rangeValue) Type() string { return "LO..HI" }
func (v *rangeValue) Set(s string) error {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "..")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || lo < 1 || hi <= lo {
		return fmt.Errorf("%q is not a range of rooms LO..HI with 1 <= LO < HI", s)
	}
	v.lo, v.hi = lo, hi
	return nil
}

type loadOptions struct {
	host                       string
	port, start, users, count  markInt
	rooms                      roomsValue
	pause                      pauseValue
	file                       string
	markRun                    bool
	transport, url, output     string
	label                      string
	duration, stall            time.Duration
	slo                        sloValue
	retry                      int
	findLimit                  rangeValue
	connectRate                float64
	connectConcurrency         int
	bind                       []string
	serverMetrics              string
	serverLabels               map[string]string
	serve                      string // "" none, "volanogo", or a broker program
	roomPrefix                 string
	qos                        int
	serverCmd, clientCmd       string
	clientTimeout              time.Duration
	runs, discard              int
	quiet, progress, keepGoing bool
	verbose                    bool // -v: every figure, lines wider than 80
	json                       bool // --json: one result line (loadjson.go)
	floor                      bool // --floor: measure the kernel floor first (floor.go)
	batchReads, strictOrder    bool
	strict                     bool
	maxPacket                  int
	publishers                 int
	engine                     string
	loops                      int
	cpuprofile                 string
	seed                       int64
	// shards, processes, churn, the server's processors
	shard, runID, startAt string
	procs, scenario       string
	serverCPUs            []int
	// a reconnect storm
	stormAt, stormBackoff, stormBackoffMax time.Duration
	stormShare                             float64
}

func newLoadCmd(io *IO) *cobra.Command {
	o := &loadOptions{}
	o.port.v, o.start.v, o.users.v, o.count.v = campaign.DefaultPort, campaign.DefaultStart, swarm.DefaultUsers, swarm.DefaultCount
	o.rooms.steps = []int{campaign.DefaultRooms}
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Run the client swarm against a chat server and print the score",
		Long: `Run VolanoMark's client (java COM.volano.Mark), wire-compatible: rooms of
users who take turns broadcasting a chat, timed from the first message to the
last user's exit, with Mark's result lines byte for byte and its score
("Average throughput"). Mark's options work as Mark spells them, with one
dash (-rooms 105), and GNU-style with two.

Beyond Mark: rooms connect in parallel; nothing hangs (a room without progress
for --stall-timeout fails the run, naming the room and the user); every
receiver checks that each message arrives exactly once and in turn; latency
percentiles; client and server CPU per message; a JSON result document per run
(-o) for 'volanogo report'. With -pause the users send on a schedule whatever
the replies (open loop). --serve starts a fresh 'volanogo serve' per run and
applies the Volano Report's run rules (4 runs, the first discarded, the score
is the average of the best 2 of the next 3).

Scale-out: --shard I/N runs a contiguous block of the rooms with the run's
--run-id, and --start-at starts the timed phase at a wall-clock time after
the set-up; --procs N (or auto: enough that no process passes its open-files
limit) starts N shard processes of this program, starts them together and
merges their results; each gets GOMAXPROCS = processors / N (at least 1)
unless GOMAXPROCS is set. --scenario churn repeats connect, Access, EnterRoom,
one chat, ExitRoom, close -count times per user and checks the server for
leaks. --server-cpus 1,2 runs each step with the spawned server restricted
to that many processors.

Brokers: --url nats://, redis:// or mqtt:// (or --serve nats-server,
redis-server, mosquitto: a fresh one per run) runs the same workload against
a pub/sub broker, one connection per user: a room is a subject, channel or
topic (--room-prefix), entering is subscribing, a chat is a publication of
the sender's name and Mark's numbered text, which the broker delivers to the
room's users and back to its sender (that echo is the chat's confirm), and
the same ledger checks every delivery. Turns, paced, churn and storm work on
every broker, and --engine epoll with turns and paced; --batch-reads and
--client-cmd do not, and a spawned broker's CPU and memory come from /proc
(none of the three has the Prometheus endpoint --server-metrics reads).

Exit status: 0 passed, 1 the run failed, 2 usage.`,
		Example: `  # Mark's benchmark against a server on localhost:8000
  volanogo load -count 100

  # One command: a fresh server per run, the run rules, the score
  volanogo load --serve -count 100

  # The steps of a scalability test, each run's document in results/
  volanogo load -rooms 15,30,45 -o results/

  # Open loop: 2 users per room, one message per user per second, 60 s
  volanogo load -rooms 500 -users 2 -pause 1s -count 0 --duration 60s

  # 19,000 connections from two client processes, merged into one result
  volanogo load --serve --procs 2 -rooms 950 -count 100

  # A CCU sweep (the vendor's heavy profile), stopping at the first broken step
  volanogo load --serve --procs auto -users 2 -pause 1s -count 0 \
      --duration 30s --connect-rate 1000 -rooms 500,2500,5000,9500,10000

  # Shard 3 of 10 of one run on another machine, all starting at the same time
  volanogo load --host server --shard 3/10 --run-id run1 \
      --start-at 2026-01-02T15:04:05Z -o results/

  # Connection churn: 1,000 sequences, then the server's leaks
  volanogo load --serve -runs 1 --scenario churn -rooms 5 -users 20 -count 10

  # Processor scaling: each step once with the server on 1, then 2 processors
  volanogo load --serve --server-cpus 1,2 -count 100

  # The same workload against brokers: a fresh one per run, the run rules
  volanogo load --serve nats-server -rooms 15 -count 100 -o results/
  volanogo load --serve mosquitto --qos 1 -rooms 15 -count 100

  # A broker you started
  volanogo load --url redis://localhost:6379 -rooms 15 -count 100`,
		Args: serveArgs(o),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return loadRun(cmd, io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.host, "host", campaign.DefaultHost, "server host")
	f.Var(&o.port, "port", "server port")
	f.Var(&o.start, "start", "first room number (rooms are Room<start>...)")
	f.Var(&o.rooms, "rooms", "number of rooms; a list (15,30,45) runs the steps of a scalability test")
	f.Var(&o.users, "users", "users per room (at least 2)")
	f.Var(&o.count, "count", "messages each user sends (0: no limit, give --duration)")
	f.Var(&o.pause, "pause", "pause between a user's messages: seconds, or a duration such as 250ms (0: turn-taking)")
	f.StringVar(&o.file, "file", defaultMarkFile, "text log of the results, with the environment (empty: none)")
	f.BoolVar(&o.markRun, "run", false, "accepted for Mark's compatibility")
	_ = f.MarkHidden("run")
	f.StringVar(&o.transport, "transport", swarm.TransportTCP, "tcp (VOLANO), ws (WebSocket, with --url), or a broker's protocol at -host and -port: nats, redis (RESP3), mqtt (3.1.1)")
	f.StringVar(&o.url, "url", "", "the server as a URL instead of --transport, -host and -port: volano://host:port, ws://host:port/chat, nats://host:port, redis://host:port, mqtt://host:port")
	f.StringVar(&o.roomPrefix, "room-prefix", "", "brokers: what goes before each room's name (Room1) to make its subject, channel or topic")
	f.IntVar(&o.qos, "qos", 0, "mqtt: the quality of service of the chats and the subscriptions, 0 (the default: at most once, as NATS and Redis pub/sub deliver) or 1 (at least once: a PUBACK for every publication and every delivery)")
	f.StringVarP(&o.output, "output", "o", "", "result document: a file, a directory for one file per run, or - for standard output (one JSON line per run; the text then goes to standard error)")
	f.StringVar(&o.label, "label", "", "platform name for 'volanogo report' (default: the server)")
	f.DurationVar(&o.duration, "duration", 0, "end the run after this long (with -count 0 or -pause)")
	f.IntVar(&o.publishers, "publishers", 0, "paced runs: how many users of each room send chats, Mark1 up, each every -pause; the others only read (0: all; 1 is nats bench's one publisher to 19 subscribers)")
	f.Float64Var(&o.connectRate, "connect-rate", 0, "new connections per second (0: unlimited)")
	f.IntVar(&o.connectConcurrency, "connect-concurrency", swarm.DefaultConnectConcurrency, "rooms connecting at once (the users of a room connect in order)")
	f.DurationVar(&o.stall, "stall-timeout", swarm.DefaultStallTimeout, "fail a room that makes no progress for this long; bounds each wait of the set-up")
	f.StringSliceVar(&o.bind, "bind", nil, "source addresses, round-robin: a list, range (127.0.0.1-127.0.0.9) or prefix (127.0.1.0/24)")
	o.slo.d = swarm.DefaultSLO
	f.Var(&o.slo, "slo", "p99 delivery latency past which a paced step breaks, and with --find-limit any step: a duration, or p99=50ms,loss=0")
	f.IntVar(&o.retry, "retry", 0, "make a failed run again, on a fresh server when load starts it, up to N more times; the report footnotes the tries")
	f.Var(&o.findLimit, "find-limit", "search LO..HI rooms for the largest step that holds (the run rules, no paced step broken, --slo when given), to within 5% in at most 8 steps")
	f.BoolVar(&o.strictOrder, "strict-order", false, "fail a run when a chat reaches a user after a later chat of its room (by default reordering is counted and reported; volanogo serve keeps each room's order)")
	f.BoolVar(&o.strict, "strict", false, "fail a run when a packet from outside it reaches one of its users (another user's chat, entry or exit, a whisper, a beep, a private session, a packet no run asks for; by default counted apart)")
	f.IntVar(&o.maxPacket, "max-packet", swarm.DefaultMaxPacket, "largest packet a user accepts from the server, in bytes (what a hostile server can make each user hold; the original server's room list is 99 KB at 10,000 rooms)")
	f.StringVar(&o.engine, "engine", swarm.EngineGoroutine, "how the users' sockets are read and paced chats sent in the timed phase: goroutine (one per user; every scenario) or epoll (event loops on their own threads, see --loops; Linux, TCP and brokers, turns and paced: storm and churn run on goroutines)")
	f.IntVar(&o.loops, "loops", 0, "--engine epoll: the number of event loops (default: half the processors, at least one)")
	f.BoolVar(&o.batchReads, "batch-reads", false, "turn-taking over TCP (Linux): wake each user once per turn (SO_RCVLOWAT); less client CPU, delivery latency of turn-giving messages only")
	f.BoolVar(&o.keepGoing, "keep-going", false, "paced sweeps: run the next steps after a broken one")
	f.StringVar(&o.serverMetrics, "server-metrics", "", "Prometheus URL of the server, for its CPU and memory")
	f.StringToStringVar(&o.serverLabels, "server-label", nil, "key=value describing the server, recorded with every run (repeatable; product=, version= and engine= name a server that cannot say them itself)")
	f.StringVar(&o.serve, "serve", "", "start a fresh server on a free loopback port for each run: 'volanogo serve' (--serve alone), or a broker: --serve "+strings.Join(broker.ServerNames(), "|"))
	f.Lookup("serve").NoOptDefVal = serveVolanogo
	f.StringVar(&o.serverCmd, "server-cmd", "", "start this server command for each run; {port} is replaced by a free port")
	f.StringVar(&o.clientCmd, "client-cmd", "", "run this VolanoMark client (the original Mark, say) for each run instead of volanogo's; {host} {port} {rooms} {users} {count} {start} are replaced by the run's")
	f.DurationVar(&o.clientTimeout, "client-timeout", campaign.DefaultClientTimeout, "--client-cmd: stop a client still running after this long (the original Mark never gives up)")
	f.IntVar(&o.runs, "runs", 0, "runs per step (default 1; 4 for turn-taking with --serve or --server-cmd)")
	f.IntVar(&o.discard, "discard", results.DefaultRunRule.Discard, "runs not counted at the start of each step")
	f.BoolVar(&o.floor, "floor", false, "before each step, measure this machine's kernel floor at its rooms (as 'volanogo floor') and record it in the step's result documents, for 'volanogo report''s efficiency")
	f.BoolVar(&o.json, "json", false, "print one JSON line at the end on standard output: score, msg/s, CPU per message, failures, verdict (the text then goes to standard error)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print each run's figures in full (p90, fan-out to the first receiver, user and system CPU, lines wider than 80 columns), as the -file log has them")
	f.BoolVar(&o.progress, "progress", false, "progress on stderr even when it is not a terminal")
	f.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the client to this file")
	_ = f.MarkHidden("cpuprofile")
	f.Int64Var(&o.seed, "seed", 0, "seed of the paced users' random offsets (0: from the clock)")
	_ = f.MarkHidden("seed")
	f.StringVar(&o.shard, "shard", "", "run shard I of N (I/N, 0-based): a contiguous block of each step's rooms, whole rooms only")
	f.StringVar(&o.runID, "run-id", "", "the run's id, shared by its shards (default: a new one per run)")
	f.StringVar(&o.startAt, "start-at", "", "start the timed phase at this wall-clock time (RFC 3339), after the set-up")
	f.StringVar(&o.procs, "procs", "", "run each run as N shard processes and merge them; auto: enough that none passes its open-files limit (default: one process, or auto for a step one process cannot hold)")
	f.StringVar(&o.scenario, "scenario", "", "turns or paced (from -pause); churn: each user connects, enters, chats once, exits and closes, -count times; storm: a paced run whose users drop at once and reconnect; private: paced private chat in pairs, each chat echoed back (In:Out 1:2, the game-server vendor's test)")
	f.DurationVar(&o.stormAt, "storm-at", 0, "--scenario storm: when the users drop, into the timed phase (default: a third of it)")
	f.Float64Var(&o.stormShare, "storm-share", 1, "--scenario storm: the share of the users that drop (0 to 1)")
	f.DurationVar(&o.stormBackoff, "storm-backoff", swarm.DefaultStormBackoff, "--scenario storm: a reconnecting user waits a random time up to this before its first attempt, twice as long at most before each next one")
	f.DurationVar(&o.stormBackoffMax, "storm-backoff-max", swarm.DefaultStormBackoffMax, "--scenario storm: the longest back-off")
	f.IntSliceVar(&o.serverCPUs, "server-cpus", nil, "run each step once per processor count, the spawned server restricted to that many (--serve, --server-cmd)")
	return cmd
}

// defaultMarkFile is Mark's -file.
const defaultMarkFile = "volano-mark.log"

// config checks the options and makes the campaign's configuration.
func (o *loadOptions) config() (campaign.Config, error) {
	usage := func(format string, args ...any) error { return &UsageError{Err: fmt.Errorf(format, args...)} }
	for _, m := range []struct {
		name string
		v    *markInt
	}{{"port", &o.port}, {"start", &o.start}, {"users", &o.users}, {"count", &o.count}} {
		if m.v.bad != "" {
			return campaign.Config{}, usage("-%s: value is not an integer (%s)", m.name, m.v.bad)
		}
	}
	if o.rooms.bad != "" {
		return campaign.Config{}, usage("-rooms: value is not an integer (%s)", o.rooms.bad)
	}
	if o.pause.bad != "" {
		return campaign.Config{}, usage("-pause: value is not an integer or a duration (%s)", o.pause.bad)
	}
	if o.users.v < 2 {
		return campaign.Config{}, usage("-users: value must be at least 2 (%d)", o.users.v)
	}
	if o.start.v < 0 {
		return campaign.Config{}, usage("-start: value must not be negative (%d)", o.start.v)
	}
	switch {
	case o.publishers < 0 || o.publishers > o.users.v:
		return campaign.Config{}, usage("--publishers: between 1 and the users of a room, %d (0: all; got %d)", o.users.v, o.publishers)
	case o.publishers > 0 && o.pause.d <= 0:
		return campaign.Config{}, usage("--publishers: paced runs only: give -pause")
	case o.publishers > 0 && o.scenario != "" && o.scenario != results.ScenarioPaced && o.scenario != results.ScenarioTurns:
		return campaign.Config{}, usage("--publishers: paced runs only, not --scenario %s", o.scenario)
	}
	if o.runs < 0 {
		return campaign.Config{}, usage("--runs: must not be negative (%d)", o.runs)
	}
	if o.discard < 0 {
		return campaign.Config{}, usage("--discard: must not be negative (%d)", o.discard)
	}
	if o.maxPacket < swarm.MinMaxPacket {
		return campaign.Config{}, usage("--max-packet: %d bytes is below %d, less than a chat of the longest names and text", o.maxPacket, swarm.MinMaxPacket)
	}
	for k := range o.serverLabels {
		if strings.TrimSpace(k) == "" {
			return campaign.Config{}, usage("--server-label: a label needs a key (key=value)")
		}
	}
	if o.cpuprofile != "" && strings.TrimSpace(o.procs) != "" {
		return campaign.Config{}, usage("--cpuprofile profiles one process: not with --procs")
	}
	cfg := campaign.Config{
		Spec: swarm.Spec{
			Scenario:           o.scenario,
			Users:              o.users.v,
			Count:              o.count.v,
			Pause:              o.pause.d,
			Duration:           o.duration,
			Publishers:         o.publishers,
			ConnectRate:        o.connectRate,
			ConnectConcurrency: o.connectConcurrency,
			StallTimeout:       o.stall,
			Bind:               o.bind,
			SLO:                o.slo.d,
			BatchReads:         o.batchReads,
			Engine:             o.engine,
			Loops:              o.loops,
			StrictOrder:        o.strictOrder,
			Strict:             o.strict,
			MaxPacket:          o.maxPacket,
			Seed:               o.seed,
			StormAt:            o.stormAt,
			StormShare:         o.stormShare,
			StormBackoff:       o.stormBackoff,
			StormBackoffMax:    o.stormBackoffMax,
		},
		Host:          o.host,
		Port:          o.port.v,
		Transport:     o.transport,
		URL:           o.url,
		Prefix:        o.roomPrefix,
		QoS:           o.qos,
		Start:         o.start.v,
		Steps:         o.rooms.steps,
		KeepGoing:     o.keepGoing,
		ServerMetrics: o.serverMetrics,
		ServerLabels:  o.serverLabels,
		Serve:         o.serve == serveVolanogo,
		ServerCmd:     o.serverCmd,
		ClientCmd:     o.clientCmd,
		ClientTimeout: o.clientTimeout,
		Runs:          o.runs,
		Retry:         o.retry,
		Discard:       o.discard,
		Label:         o.label,
		RunID:         o.runID,
		ServerCPUs:    o.serverCPUs,
	}
	if err := o.target(&cfg); err != nil {
		return campaign.Config{}, err
	}
	if o.retry < 0 {
		return campaign.Config{}, usage("--retry: must not be negative (%d)", o.retry)
	}
	if o.findLimit.hi > 0 {
		cfg.FindLimit = &campaign.FindLimit{Lo: o.findLimit.lo, Hi: o.findLimit.hi}
		if o.slo.set {
			cfg.FindLimit.SLO = o.slo.d
		}
		if o.rooms.set {
			return campaign.Config{}, usage("--find-limit chooses the steps: not with -rooms")
		}
	}
	if cfg.Serve {
		argv, err := serveCommand(o.transport == swarm.TransportWS)
		if err != nil {
			return campaign.Config{}, err
		}
		cfg.ServeCommand = argv
	}
	if o.shard != "" {
		i, n, ok := strings.Cut(o.shard, "/")
		si, err1 := strconv.Atoi(strings.TrimSpace(i))
		sn, err2 := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err1 != nil || err2 != nil || sn < 1 || si < 0 || si >= sn {
			return campaign.Config{}, usage("--shard: %q is not I/N with 0 <= I < N", o.shard)
		}
		cfg.ShardIndex, cfg.ShardCount = si, sn
	}
	if o.startAt != "" {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(o.startAt))
		if err != nil {
			return campaign.Config{}, usage("--start-at: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", o.startAt)
		}
		cfg.StartAt = t
	}
	switch p := strings.TrimSpace(o.procs); p {
	case "":
		// By default a step that one process cannot hold within its
		// open-files limit is split into enough processes.
		cfg.SplitWhenNeeded = true
	case "auto":
		cfg.Procs = campaign.ProcsAuto
	default:
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 {
			return campaign.Config{}, usage("--procs: %q is not a number of processes or auto", o.procs)
		}
		cfg.Procs = v
	}
	return cfg, nil
}

// serveVolanogo is --serve alone: volanogo's own server.
const serveVolanogo = "volanogo"

// serveArgs lets `--serve NAME` name a broker with a space (pflag takes
// an optional value only as --serve=NAME): the one argument after it.
func serveArgs(o *loadOptions) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if _, ok := broker.LookupServer(args[0]); ok && len(args) == 1 && o.serve == serveVolanogo {
			o.serve = args[0]
			return nil
		}
		return cobra.NoArgs(cmd, args)
	}
}

// defaultPorts are the brokers' and VOLANO's ports for a URL without one.
var defaultPorts = map[string]int{"volano": campaign.DefaultPort, swarm.TransportNATS: 4222, swarm.TransportRedis: 6379, swarm.TransportMQTT: 1883}

// target reads --url and --serve NAME into cfg's target.
func (o *loadOptions) target(cfg *campaign.Config) error {
	usage := func(format string, args ...any) error { return &UsageError{Err: fmt.Errorf(format, args...)} }
	if o.url != "" {
		u, err := url.Parse(o.url)
		if err != nil || u.Host == "" {
			return usage("--url: %q is not a URL such as nats://localhost:4222", o.url)
		}
		switch u.Scheme {
		case "ws", "wss":
			cfg.Transport = swarm.TransportWS
		case "volano", swarm.TransportNATS, swarm.TransportRedis, swarm.TransportMQTT:
			if u.Path != "" && u.Path != "/" {
				return usage("--url: %s://host:port has no path (%q)", u.Scheme, u.Path)
			}
			cfg.Transport, cfg.URL, cfg.Host, cfg.Port = u.Scheme, "", u.Hostname(), defaultPorts[u.Scheme]
			if cfg.Transport == "volano" {
				cfg.Transport = swarm.TransportTCP
			}
			if p := u.Port(); p != "" {
				if cfg.Port, err = strconv.Atoi(p); err != nil {
					return usage("--url: %q is not a port", p)
				}
			}
		default:
			return usage("--url: the scheme %q is not volano, ws, wss, nats, redis or mqtt", u.Scheme)
		}
	}
	if o.serve == "" || o.serve == serveVolanogo {
		return nil
	}
	b, ok := broker.LookupServer(o.serve)
	switch {
	case !ok:
		return usage("--serve: %q is not %s (or --serve alone: volanogo serve)", o.serve, strings.Join(broker.ServerNames(), ", "))
	case o.serverCmd != "":
		return usage("--serve %s and --server-cmd exclude each other", o.serve)
	case cfg.Transport != swarm.TransportTCP && cfg.Transport != b.Protocol:
		return usage("--serve %s speaks %s, not %s", o.serve, b.Protocol, cfg.Transport)
	}
	cfg.Transport, cfg.ServerCmd = b.Protocol, b.Command
	if _, err := exec.LookPath(b.Name); err != nil {
		// Not on the PATH (/usr/sbin, say): the shell is told where.
		if p, err := b.Path(); err == nil {
			cfg.ServerCmd = p + strings.TrimPrefix(b.Command, b.Name)
		}
	}
	return nil
}

// serveCommand is this executable's serve command on loopback ports
// chosen by the kernel (--serve).
func serveCommand(ws bool) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--serve: find this executable: %w", err)
	}
	argv := []string{exe, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}
	if ws {
		argv = append(argv, "--ws-listen", "127.0.0.1:0")
	}
	return argv, nil
}

func loadRun(cmd *cobra.Command, io *IO, o *loadOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	cfg.CommandLine = commandLine(cmd)
	if err := checkTarget(cmd.Context(), cfg); err != nil {
		if o.json {
			_ = writeJSONLine(io.Out, newJSONLine(cfg, nil, err))
		}
		return err
	}
	sink, err := newLoadSink(io, o, cfg)
	if err != nil {
		return err
	}
	defer sink.close()
	if o.floor {
		cfg.Floor = loadFloor(sink.text, o.count.v, o.pause.d, o.duration)
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := runCampaign(cmd.Context(), cfg, sink)
	sink.progress.end()
	if res != nil && sink.many && len(res.Steps) > 0 {
		sink.summary(res.Steps)
	}
	if res != nil && res.Search != nil {
		fmt.Fprintf(sink.text, "Find limit: %s.\n", res.Search.Text())
	}
	if werr := sink.close(); werr != nil {
		if err == nil {
			err = werr
		} else {
			// The run's own failure is the status; the log's is said too.
			fmt.Fprintln(io.Err, errorLine(cmd, werr))
		}
	}
	err = campaignExit(err)
	if o.json {
		if jerr := writeJSONLine(io.Out, newJSONLine(cfg, res, err)); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

// campaignExit maps a campaign's error to the command's: a usage error
// (exit 2), an interruption (130), a failed run (1), or err itself.
func campaignExit(err error) error {
	switch {
	case err == nil:
		return nil
	case campaign.IsUsage(err):
		return err // a UsageError already
	case errors.Is(err, campaign.ErrInterrupted):
		return &ExitError{Code: exitInterrupted}
	case errors.Is(err, campaign.ErrFailed):
		return &ExitError{Code: 1}
	}
	return err
}

// commandLine is the client's argv for the result document: the process's
// own when it runs `load`, else rebuilt from the flags set.
func commandLine(cmd *cobra.Command) []string {
	if len(os.Args) > 1 && os.Args[1] == "load" {
		return append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	}
	argv := []string{"volanogo", "load"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		argv = append(argv, "--"+f.Name+"="+f.Value.String())
	})
	return argv
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
