package results

import (
	"time"
)

// SchemaVersion is the version of the result document written by this
// build. Readers accept every version up to and including it.
const SchemaVersion = 1

// Document is the result of one run of `volanogo load` (or of one shard of
// a run). It is written as one JSON object. Field names are stable: a new
// field may be added within a schema version, a change of meaning needs a
// new version.
type Document struct {
	// Schema is SchemaVersion when written by this build.
	Schema int `json:"schema"`
	// RunID identifies the run; every shard of one run carries the same id.
	RunID string `json:"run_id"`
	// Shard is set when the run was split across processes or machines.
	Shard *Shard `json:"shard,omitempty"`
	// Shards is the number of shard documents merged into this one (see
	// Merge); 0 for a document written by one process.
	Shards int `json:"shards,omitempty"`
	// Label names the platform under test; report groups rows by it.
	Label string `json:"label"`
	// Tool is the volanogo build that wrote the document.
	Tool Tool `json:"tool"`
	// CommandLine is the client's argv, program name included.
	CommandLine []string `json:"command_line"`
	Config      Config   `json:"config"`
	// Environment is the client machine.
	Environment Environment `json:"environment"`
	// Step and Run place the document within a sweep: Step is the number of
	// rooms of this step, Run the 1-based run number within the step.
	// Discarded marks a run excluded by the run rules (the first one).
	Step      int  `json:"step,omitempty"`
	Run       int  `json:"run,omitempty"`
	Discarded bool `json:"discarded,omitempty"`

	// Started and Ended bound the whole run, set-up included.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// TimedStart and TimedEnd bound the timed (chat) phase.
	TimedStart time.Time `json:"timed_start"`
	TimedEnd   time.Time `json:"timed_end"`
	// SetupSeconds is the untimed connection set-up.
	SetupSeconds float64 `json:"setup_seconds"`
	// ElapsedSeconds is the timed phase, as Mark measures it (milliseconds
	// resolution).
	ElapsedSeconds float64 `json:"elapsed_seconds"`

	// Passed is true when the run completed with no failure of any kind.
	Passed bool `json:"passed"`
	// Interrupted is true when the run was stopped (SIGINT) before its end.
	Interrupted bool `json:"interrupted,omitempty"`

	Counts Counts `json:"counts"`
	// Score is Mark's "Average throughput": total messages / elapsed
	// seconds, rounded half up; 0 when the run failed or lasted under 1 s.
	Score int64 `json:"score"`
	// Throughput is total / elapsed unrounded, also for failed runs.
	Throughput float64 `json:"throughput"`

	// Latency holds the HDR histograms of the run by name (see the Latency*
	// constants). Values are nanoseconds.
	Latency map[string]*Histogram `json:"latency,omitempty"`
	// Timeline is messages per second of the timed phase.
	Timeline *Timeline `json:"timeline,omitempty"`

	Connections Connections `json:"connections"`
	// Failures are counted by kind, each with its first example.
	Failures []Failure `json:"failures,omitempty"`
	// Warnings say what the run could not measure or report and why (the
	// server's metrics could not be read, say); they do not fail it.
	Warnings []string `json:"warnings,omitempty"`

	// Client is the resource use of the load process over the timed phase.
	Client Usage `json:"client"`
	// Server is the server's resource use over the timed phase, when known.
	Server *ServerUsage `json:"server,omitempty"`
	// ServerInfo is the server the run measured (what it is, its
	// machine), recorded whether the run passed or failed.
	ServerInfo *ServerInfo `json:"server_info,omitempty"`
	// Network is the path to the server, measured before the run.
	Network *Network `json:"network,omitempty"`
	// TCP is the kernel's TCP counters over the timed phase (Linux).
	TCP *TCPCounters `json:"tcp,omitempty"`
	// Retry places the run among the tries of load --retry.
	Retry *Retry `json:"retry,omitempty"`
	// Search places the run in a load --find-limit search.
	Search *Search `json:"search,omitempty"`

	// Integrity is the client's ledger of the run's chats: what was lost,
	// duplicated, corrupted or reordered, and the traffic of users that
	// are not the run's own (written by builds that keep the ledger).
	Integrity *Integrity `json:"integrity,omitempty"`

	// Paced is set for open-loop (pause) runs.
	Paced *Paced `json:"paced,omitempty"`
	// Churn is set for the connection-churn scenario.
	Churn *Churn `json:"churn,omitempty"`
	// Storm is set for the reconnect-storm scenario.
	Storm *Storm `json:"storm,omitempty"`

	// Source is where the document was read from (a file name, or "-"),
	// set by Read; it is not part of the JSON.
	Source string `json:"-"`
}

// Shard says which part of a run a document holds.
type Shard struct {
	Index int `json:"index"` // 0-based
	Count int `json:"count"`
	// StartAt is the agreed wall-clock start of the timed phase, if any.
	StartAt time.Time `json:"start_at,omitzero"`
	// ClockOffsetSeconds is how late this shard's timed phase actually began
	// relative to StartAt (its own clock).
	ClockOffsetSeconds float64 `json:"clock_offset_seconds,omitempty"`
	// Rooms are the room numbers this shard ran.
	Rooms []int `json:"rooms,omitempty"`
}

// Tool is the build of volanogo that wrote a document.
type Tool struct {
	Name      string `json:"name"` // "volanogo"
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
}

// Scenario names.
const (
	ScenarioTurns = "turns" // Mark's turn-taking (pause 0)
	ScenarioPaced = "paced" // open loop, one message per user every pause
	ScenarioChurn = "churn" // connect, enter, chat, exit, close, repeated
	ScenarioStorm = "storm" // paced, with users dropping at once and reconnecting
	// ScenarioPrivate: paced private chat, the game-server vendor's test:
	// the users of a room in pairs, each pair in a private session, each
	// user sending its partner a private chat every pause, which the
	// partner echoes back (In:Out 1:2).
	ScenarioPrivate = "private"
)

// Config is the run's configuration as the client understood it.
type Config struct {
	Scenario  string `json:"scenario"`
	Transport string `json:"transport"` // "tcp" or "ws"
	Host      string `json:"host,omitempty"`
	Port      int    `json:"port,omitempty"`
	URL       string `json:"url,omitempty"`
	StartRoom int    `json:"start"`
	Rooms     int    `json:"rooms"`
	Users     int    `json:"users"`
	Count     int    `json:"count"`
	// PauseSeconds is 0 for turn-taking.
	PauseSeconds float64 `json:"pause_seconds"`
	// Publishers is how many users of each room sent chats in a paced run
	// (load --publishers); 0: every user.
	Publishers          int      `json:"publishers,omitempty"`
	DurationSeconds     float64  `json:"duration_seconds,omitempty"`
	ConnectRate         float64  `json:"connect_rate,omitempty"`
	ConnectConcurrency  int      `json:"connect_concurrency,omitempty"`
	StallTimeoutSeconds float64  `json:"stall_timeout_seconds,omitempty"`
	SLOSeconds          float64  `json:"slo_seconds,omitempty"`
	Bind                []string `json:"bind,omitempty"`
	// ServerCPUs is the number of processors the spawned server was
	// restricted to (0 = not restricted or not spawned).
	ServerCPUs int `json:"server_cpus,omitempty"`
	// ServerCommand is the command that started the server, when the client
	// started it (--serve or --server-cmd; a --server-cmd with its {port}
	// as given, the port being Port).
	ServerCommand []string `json:"server_command,omitempty"`
	// ClientCommand is the external client that made the run (--client-cmd,
	// the original Mark say) instead of volanogo's swarm.
	ClientCommand []string `json:"client_command,omitempty"`
	// ClientEngine is how volanogo's swarm read its sockets: "goroutine"
	// (one per user) or "epoll" (event loops); empty in older documents.
	ClientEngine string `json:"client_engine,omitempty"`
}

// Environment describes a machine. OpenFilesSoft and OpenFilesHard are
// RLIMIT_NOFILE (-1: unlimited, 0: unknown).
type Environment struct {
	Hostname      string `json:"hostname"`
	OS            string `json:"os"`                     // runtime.GOOS
	Arch          string `json:"arch"`                   // runtime.GOARCH
	Kernel        string `json:"kernel"`                 // uname -r
	Distribution  string `json:"distribution,omitempty"` // PRETTY_NAME of /etc/os-release
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"` // logical processors online
	MemoryBytes   int64  `json:"memory_bytes"`
	GoVersion     string `json:"go_version"`
	GOMAXPROCS    int    `json:"gomaxprocs"`
	OpenFilesSoft int64  `json:"open_files_soft"`
	OpenFilesHard int64  `json:"open_files_hard"`
	// EphemeralPorts is net.ipv4.ip_local_port_range, e.g. "32768 60999".
	EphemeralPorts string `json:"ephemeral_ports,omitempty"`
	// TCPCongestion is net.ipv4.tcp_congestion_control, e.g. "cubic".
	TCPCongestion string `json:"tcp_congestion,omitempty"`
	// LoopbackQuickACK is true when the local route of 127.0.0.1 has
	// quickack set: loopback TCP then acknowledges at once, without the
	// delayed-ACK timer (see TCPCounters).
	LoopbackQuickACK bool `json:"loopback_quickack,omitempty"`
	// Floor is the machine's kernel floor for the workload, measured in
	// the same sitting (load --floor): see Floor and Efficiency.
	Floor []Floor `json:"floor,omitempty"`
}

// Counts are Mark's totals. Expected is rooms × users × count for sent and
// the total a faultless turn-taking run reaches (0 when open-ended).
type Counts struct {
	Sent          int64 `json:"sent"`
	Received      int64 `json:"received"`
	Total         int64 `json:"total"`
	ExpectedSent  int64 `json:"expected_sent,omitempty"`
	ExpectedTotal int64 `json:"expected_total,omitempty"`
	// Confirms counts Chat confirms received (not part of Mark's total).
	Confirms int64 `json:"confirms,omitempty"`
}

// Histogram names in Document.Latency.
const (
	// LatencyDelivery: from the send of a chat to the arrival of each of
	// its indications (turn-taking: every indication; paced: from the
	// actual send).
	LatencyDelivery = "delivery"
	// LatencyDeliveryScheduled: paced runs, from the time the send was
	// scheduled (corrected for coordinated omission).
	LatencyDeliveryScheduled = "delivery_scheduled"
	// LatencyTurn: turn-taking, from the send of message n in a room to the
	// send of message n+1 in that room.
	LatencyTurn = "turn"
	// LatencyConnect: from connect() to the EnterRoom confirm.
	LatencyConnect = "connect"
	// LatencySequence: churn, one whole sequence (excluding each user's
	// first, see Churn.First).
	LatencySequence = "sequence"
	// LatencyReconnect: storm, from a user's drop to its EnterRoom
	// confirm on its new connection.
	LatencyReconnect = "reconnect"
	// LatencyResponse: private chat, from the send of a chat to the
	// arrival of its partner's echo of it (a round trip through the
	// server, twice).
	LatencyResponse = "response"
	// LatencyFanoutFirst and LatencyFanoutLast: one value per broadcast,
	// from the send of a chat to its arrival at the first and at the last
	// of the other users of its room; LatencyFanoutSpread is the time
	// between those two arrivals. Broadcasts that did not reach every
	// other user are not in them.
	LatencyFanoutFirst  = "fanout_first"
	LatencyFanoutLast   = "fanout_last"
	LatencyFanoutSpread = "fanout_spread"
)

// Histogram is an HDR histogram of nanosecond values with a summary that a
// reader without an HDR library can use.
type Histogram struct {
	// HDR is the histogram in the HdrHistogram V2 compressed encoding,
	// base64 (hdrhistogram-go Histogram.Encode / hdrhistogram.Decode).
	HDR   string  `json:"hdr"`
	Count int64   `json:"count"`
	Min   int64   `json:"min_ns"`
	Max   int64   `json:"max_ns"`
	Mean  float64 `json:"mean_ns"`
	P50   int64   `json:"p50_ns"`
	P90   int64   `json:"p90_ns"`
	P99   int64   `json:"p99_ns"`
	P999  int64   `json:"p999_ns"`
}

// Timeline is the timed phase second by second. When a run is long the
// interval grows (2 s, 4 s, ...) so that a timeline never has more than
// MaxTimelinePoints points.
type Timeline struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	// Sent[i] and Received[i] are the messages of interval i.
	Sent     []int64 `json:"sent"`
	Received []int64 `json:"received"`
}

// MaxTimelinePoints bounds Timeline.
const MaxTimelinePoints = 3600

// Connections counts the client's connections.
type Connections struct {
	Attempted   int64 `json:"attempted"`
	Established int64 `json:"established"`
	// Peak is the most connections open at once.
	Peak int64 `json:"peak"`
	// Carried is the connections the server carried: those that completed
	// their Access and entered their room in the set-up (all open at once
	// from then on). A connection the server accepted and closed at once
	// is established but not carried. Nil in older documents.
	Carried *int64 `json:"carried,omitempty"`
	// ConnectRate is the rate the set-up achieved, in connections per
	// second: the carried connections after the first over the time from
	// the first connect to the last EnterRoom confirm (0 with fewer than
	// two).
	ConnectRate float64 `json:"connect_rate,omitempty"`
}

// Failure kinds, for footnotes.
const (
	FailRefused      = "refused"        // ECONNREFUSED
	FailOpenFiles    = "open_files"     // EMFILE/ENFILE in the client
	FailNoSourcePort = "no_source_port" // EADDRNOTAVAIL
	FailTimeout      = "timeout"        // a phase deadline passed
	FailReset        = "reset"          // ECONNRESET
	FailClosed       = "closed"         // the server closed a connection
	FailProtocol     = "protocol"       // a packet the client could not decode or did not expect
	FailServerError  = "server_error"   // a StreamableError from the server (its text in Example)
	FailDenied       = "denied"         // Access or EnterRoom refused
	FailStall        = "stall"          // a room made no progress for the stall timeout
	FailIntegrity    = "integrity"      // totals that differ from what the run sent (see the kinds below)
	FailLost         = "lost"           // a chat that had not reached a receiver when the run ended
	FailDuplicated   = "duplicated"     // a chat that reached a receiver twice
	FailCorrupted    = "corrupted"      // a chat whose text or sender is not what was sent
	FailReordered    = "reordered"      // a chat that arrived after a later one of its room (with strict order only)
	FailOutside      = "outside"        // a packet from a user outside the run (with load --strict only)
	FailServerStart  = "server_start"   // a spawned server did not start
	FailShard        = "shard"          // a shard process failed
	FailLeak         = "leak"           // churn: connections, goroutines or descriptors left on the server
	FailOther        = "other"
)

// Failure is one kind of failure: how often, and the first example.
type Failure struct {
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
	// At is when the first example happened.
	At time.Time `json:"at,omitzero"`
	// Server is the server's own account of the failure: its closes and
	// refusals by reason over the run (volanogo serve's metrics), or the
	// last error lines of a server the client started; "" when unknown.
	Server string `json:"server,omitempty"`
}

// Usage is a process's resource use over the timed phase.
type Usage struct {
	CPUUserSeconds   float64 `json:"cpu_user_seconds"`
	CPUSystemSeconds float64 `json:"cpu_system_seconds"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
	// CPUPerMessageMicros is (user+system) / total messages, in µs.
	CPUPerMessageMicros float64 `json:"cpu_per_message_us,omitempty"`
}

// ServerUsage is what the client learnt of the server.
type ServerUsage struct {
	// Source is "metrics" (Prometheus process collector) or "proc".
	Source     string  `json:"source"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPercent is CPUSeconds / elapsed × 100 (100 = one processor).
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBeforeBytes is the server's resident memory before the run's
	// set-up (its connections), when it was read: RSSStartBytes minus it
	// is what the run's connections cost (ServerMemoryPerConnection).
	RSSBeforeBytes      int64   `json:"rss_before_bytes,omitempty"`
	RSSStartBytes       int64   `json:"rss_start_bytes"`
	RSSEndBytes         int64   `json:"rss_end_bytes"`
	CPUPerMessageMicros float64 `json:"cpu_per_message_us,omitempty"`
	// Engine is the engine the server said it serves its TCP connections
	// with (volanogo_server_info in its metrics: "goroutine", "epoll",
	// ...); empty when it did not say (another server, an older volanogo,
	// figures read from /proc).
	Engine string `json:"engine,omitempty"`
	// CoalesceSeconds is the epoll engine's coalescing window (serve
	// --coalesce, volanogo_server_coalesce_seconds): how long a loop
	// waited after a round of few events; zero without one or when the
	// server did not say.
	CoalesceSeconds float64 `json:"coalesce_seconds,omitempty"`
	// CPUs and GOMAXPROCS the server ran with, when known.
	CPUs       int `json:"cpus,omitempty"`
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	// GCPauses is the Go garbage collector's stop-the-world pauses over
	// the timed phase, and GCPauseP99Seconds and GCPauseMaxSeconds their
	// p99 and longest, when the server exposes them
	// (volanogo_gc_pause_seconds): bucket bounds, within a fifth.
	GCPauses          int64   `json:"gc_pauses,omitempty"`
	GCPauseP99Seconds float64 `json:"gc_pause_p99_seconds,omitempty"`
	GCPauseMaxSeconds float64 `json:"gc_pause_max_seconds,omitempty"`
	// After the run, when the server exposes them (churn leak check).
	OpenConnections int64 `json:"open_connections,omitempty"`
	Goroutines      int64 `json:"goroutines,omitempty"`
	OpenFDs         int64 `json:"open_fds,omitempty"`
}

// TCPCounters are the kernel's TCP counters (/proc/net/snmp and
// /proc/net/netstat) over a run's timed phase. They are the client's whole
// network namespace: on loopback both the client's and the server's
// segments, and any other TCP traffic of the machine. Retransmissions,
// delayed ACKs and loss probes are how the kernel's timers show in a chat
// benchmark: see the README's "Delayed ACKs on loopback".
type TCPCounters struct {
	SegmentsIn  int64 `json:"segments_in"`
	SegmentsOut int64 `json:"segments_out"`
	// Retransmitted segments (RetransSegs).
	Retransmitted int64 `json:"retransmitted"`
	// DelayedACKs is how often a delayed-ACK timer sent an ACK.
	DelayedACKs int64 `json:"delayed_acks"`
	// LossProbes is how often a sender's tail-loss-probe timer fired.
	LossProbes int64 `json:"loss_probes"`
}

// RetransmittedPercent is the share of the segments sent that were
// retransmissions, in percent; false when no segment was sent.
func (t *TCPCounters) RetransmittedPercent() (float64, bool) {
	if t == nil || t.SegmentsOut <= 0 {
		return 0, false
	}
	return 100 * float64(t.Retransmitted) / float64(t.SegmentsOut), true
}

// Integrity is the ledger of a run's chats, kept by every receiver. Each
// chat the run sends carries its sender's number and its own number within
// the sender's chats in its text (Mark's 60 characters, the same length),
// so that every arrival is identified. A chat is lost when it had not
// reached a receiver when the run ended, duplicated when it reached one
// twice, corrupted when its text or sender is not what was sent. It is
// reordered when it reaches a receiver after a later chat of its room (in
// turn-taking the room's chats have one order, the order of the turns) and
// sender-reordered when it arrives after a later chat of the same sender.
// Loss, duplication and corruption fail a run; reordering fails it only
// with StrictOrder. Counts are per receiver: a chat lost by three
// receivers counts three.
type Integrity struct {
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	Corrupted  int64 `json:"corrupted"`
	// Reordered counts arrivals after a later chat of the room (turn-taking
	// runs only; a paced room has no order of its own); MaxDisplacement is
	// the largest distance, in chats, between such an arrival and the
	// latest chat its receiver had already seen.
	Reordered       int64 `json:"reordered"`
	MaxDisplacement int64 `json:"max_displacement,omitempty"`
	// ReceiversReordered of Receivers saw at least one reordered chat.
	ReceiversReordered int64 `json:"receivers_reordered,omitempty"`
	Receivers          int64 `json:"receivers"`
	// SenderReordered counts arrivals after a later chat of the same
	// sender (a server that keeps each sender's order never has any).
	SenderReordered int64 `json:"sender_reordered"`
	// FirstReordered describes the first reordered arrival.
	FirstReordered string `json:"first_reordered,omitempty"`
	// StrictOrder is set when the run failed on any reordering
	// (--strict-order).
	StrictOrder bool `json:"strict_order,omitempty"`
	// Outside is the traffic of users that are not the run's own (other
	// clients in the same rooms), counted apart and a failure only with
	// load --strict (FailOutside).
	Outside *Outside `json:"outside,omitempty"`
	// InFlight counts the chats a receiver had not had when its room
	// stalled and that no later chat of the room had overtaken there:
	// held by a stopped server, say, or lost, which a stall cannot tell
	// apart. The stall is the failure; they are not counted in Lost.
	InFlight int64 `json:"in_flight,omitempty"`
}

// Outside counts packets from users that are not the run's own, as the
// run's receivers saw them (one chat seen by 19 receivers counts 19).
type Outside struct {
	Chats   int64 `json:"chats"`
	Entered int64 `json:"entered"`
	Exited  int64 `json:"exited"`
	// Whispers and Beeps addressed to the run's users.
	Whispers int64 `json:"whispers,omitempty"`
	Beeps    int64 `json:"beeps,omitempty"`
	// PrivateEntered counts private sessions opened with the run's users
	// (EnterPrivate), PrivateExited their ends (ExitPrivate) and
	// PrivateChats their chats (a Chat with a private room id).
	PrivateEntered int64 `json:"private_entered,omitempty"`
	PrivateExited  int64 `json:"private_exited,omitempty"`
	PrivateChats   int64 `json:"private_chats,omitempty"`
	// Other counts packets of known kinds that a client does not expect
	// (a UserList confirm it did not ask for, a Kick, a Chat request);
	// FirstOther names the first, as "Mark3 in Room1: UserList confirm".
	Other      int64  `json:"other,omitempty"`
	FirstOther string `json:"first_other,omitempty"`
}

// Failed reports whether the ledger found chats lost, duplicated or
// corrupted, or reordered ones in a run with StrictOrder.
func (g *Integrity) Failed() bool {
	if g == nil {
		return false
	}
	return g.Lost > 0 || g.Duplicated > 0 || g.Corrupted > 0 || (g.StrictOrder && g.Reordered > 0)
}

// ReorderedShare is the share of receivers that saw a reordered chat, in
// percent; false when the ledger counted no receiver.
func (g *Integrity) ReorderedShare() (float64, bool) {
	if g == nil || g.Receivers <= 0 {
		return 0, false
	}
	return 100 * float64(g.ReceiversReordered) / float64(g.Receivers), true
}

// Paced is the outcome of an open-loop step.
type Paced struct {
	ConcurrentUsers int64 `json:"concurrent_users"`
	// InPerSecond is the chats the clients sent within the schedule's
	// window (the duration, or count pauses), per second of it;
	// OutPerSecond the confirms and indications they read within it: not
	// the drain's deliveries. (The epoll client reads a confirm with the
	// user's next indication, up to a pause later: the confirms of the
	// window's last pause may fall after it.)
	InPerSecond  float64 `json:"in_per_second"`
	OutPerSecond float64 `json:"out_per_second"` // confirms + indications read within the window
	// Broken is set when the step broke: connections refused or dropped,
	// messages lost, or p99 over the SLO. Reason says which.
	Broken bool   `json:"broken"`
	Reason string `json:"reason,omitempty"`
}

// Churn is the outcome of the churn scenario.
type Churn struct {
	Sequences          int64   `json:"sequences"`
	SequencesPerSecond float64 `json:"sequences_per_second"`
	// First is the histogram of each user's first sequence (cold); the
	// rest are in Latency[LatencySequence].
	First *Histogram `json:"first,omitempty"`
	Leaks
}

// Leaks is what the server kept after a run (connections, goroutines,
// descriptors) compared with before it, once its figures settled.
type Leaks struct {
	LeakedConnections int64 `json:"leaked_connections"`
	LeakedGoroutines  int64 `json:"leaked_goroutines"`
	LeakedFDs         int64 `json:"leaked_fds"`
}

// Any reports whether anything leaked.
func (l Leaks) Any() bool {
	return l.LeakedConnections != 0 || l.LeakedGoroutines != 0 || l.LeakedFDs != 0
}

// Storm is the outcome of the reconnect-storm scenario: a paced run in
// which, AtSeconds into the timed phase, Dropped of the Users dropped their
// connections at once and reconnected with jittered back-off
// (Latency[reconnect] holds each one's time from its drop to its
// EnterRoom confirm). RecoverySeconds is the time from the storm until
// every dropped user was back in its room and had received a chat sent
// after its return; 0 when some never recovered. Chats a receiver should
// have had while in its room are in Integrity.Lost.
type Storm struct {
	AtSeconds       float64 `json:"at_seconds"`
	Users           int64   `json:"users"`
	Dropped         int64   `json:"dropped"`
	Reconnected     int64   `json:"reconnected"`
	Recovered       int64   `json:"recovered"`
	Attempts        int64   `json:"attempts"`
	RecoverySeconds float64 `json:"recovery_seconds"`
	// MissedSends counts the scheduled chats that dropped users did not
	// send while they were away.
	MissedSends int64 `json:"missed_sends"`
	Leaks
}
