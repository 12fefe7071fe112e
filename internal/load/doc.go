// Package load is volanogo's client swarm: VolanoMark's client (the
// original's COM.volano.Mark, protocol sheet §10) rebuilt, wire-compatible,
// so that it measures volanogo's server, the original Java server or any
// server that speaks the VOLANO protocol, with scores that compare with the
// original's. Run takes a Config and writes the results; it never prints
// elsewhere and never reads flags (internal/cli does).
//
// # A run
//
// A run has rooms Room<start>…, each with users Mark1…MarkN, one connection
// each. The set-up is not timed: rooms connect in parallel (at most
// Config.ConnectConcurrency at a time, at most Config.ConnectRate new
// connections per second, source addresses round-robin from Config.Bind),
// the users of one room strictly in order, each sending Access (version
// 2.13.4, Mark's documentBase and codeBase, volanogo's platform in the JVM
// property slots) and EnterRoom with Mark's profile, until every user has
// seen the room full (Mark's enterCount). Every wait has a deadline
// (Config.StallTimeout).
//
// The timed phase starts when every room is ready. In turn-taking mode
// (pause 0) user 1 of each room sends the room's first chat, the fixed
// 60-character text; every user, on each chat indication, counts it and
// sends the next chat when (sent+received) mod users = its number−1, until
// it has sent count; then user 1 leaves (ExitRoom, RoomList), each user k
// leaves once k−1 users have left, and a user is done at its RoomList
// confirm. The phase ends when every user is done. In pause mode (open
// loop) every user sends one chat every pause from a random offset in
// [0, pause), on an absolute schedule whatever the replies, until count or
// Config.Duration; then the run waits for the messages in flight and every
// user leaves.
//
// # Cost per message
//
// Each connection has one goroutine. In turn-taking it reads and sends: a
// chat is pre-encoded, and exactly one message per room is in flight, so the
// sender writes it from its reading goroutine. Over TCP the goroutine's loop
// runs inside one syscall.RawConn.Read callback, reading the socket with
// read(2) itself: after a read that drained the socket it waits for
// readiness instead of trying one more read, so a received message costs
// one read(2). Packets are split by protocol.Reader and chats viewed by
// protocol.ParseChat without allocating. Counts are the goroutine's own
// until the end; the only shared writes per message are the room's send
// time (atomic) and, per batch of 32, a histogram shard under its lock.
//
// # What a run checks
//
// Every chat carries its sender's number and its own number in its text
// (Mark's 60 characters, the same length; see ledger.go), and every
// receiver keeps a ledger of what it got from each sender of its room. A
// chat is lost when it had not reached a receiver when the run ended (in
// turn-taking a lost chat stops its receiver's count, as it stops Mark's:
// the room stalls and the stall ends the run; in pause mode, after the
// drain), duplicated when it reached one twice, corrupted when its text or
// sender is not what was sent; each of these fails the run. A chat that
// arrives after a later chat of its room is reordered, after a later chat
// of its sender sender-reordered: both are counted and reported (how many,
// the largest displacement, the share of receivers), and fail the run only
// with Config.StrictOrder. Mark's count turn rule goes on through
// reordering, and a user leaves only once it has had every chat of its
// room. Only the run's own users count: chats, entries and exits of other
// users sharing a room are counted apart. Totals that differ from rooms ×
// users × count sent and sent × (users−1) received without the ledger
// explaining them are an integrity failure. A room that makes no
// progress for the stall timeout fails the run with a message naming the
// room, the user it waits for and the last packet that user saw. Failures
// are classified (refused, open files, no source port, timeout, reset,
// closed, protocol, server error, denied, stall, lost, duplicated,
// corrupted, reordered, integrity) and end the run at once, except server
// errors and the ledger's, which are counted.
//
// # What a run measures
//
// Mark's counts and score (results.MarkScore), the fan-out of every
// broadcast (from its send to its first and its last receiver, and the
// spread between them), the latency of every indication from its send (turn-taking: the room knows the send time of
// its message in flight, in a ring indexed by message number; pause mode:
// the sender's record of its n-th send, matched by the receiver's count of
// that sender's messages, both from the actual send and from the scheduled
// one, which corrects for coordinated omission), the turn time (from one
// send of a room to the next), the connect time, a per-second timeline,
// the client's CPU (getrusage) and peak RSS, and the server's CPU and RSS
// when known: from its Prometheus metrics (Config.ServerMetrics, or the
// metrics port of a server started with Config.Serve) or from
// /proc/<pid> (Config.ServerCmd). Each run gives a results.Document.
//
// # Runs and steps
//
// Config.Steps runs a scalability test, one step per room count; each step
// has Config.Runs runs, of which the first Config.Discard are discarded; the
// summary applies the Volano Report's rule (the average of the best two of
// the next three) and gives the median. With Config.Serve or
// Config.ServerCmd every run gets a fresh server on a free loopback port,
// stopped after it (SIGTERM, then SIGKILL). Config.ServerCPUs adds a
// dimension: each step runs once per processor count, the server started
// on the first n processors this process may use (CPU affinity taken by
// the forking thread, so that every thread of the server inherits it, as
// taskset does) with GOMAXPROCS=n for `volanogo serve`; the documents
// record it in Config.ServerCPUs, Server.CPUs and Server.GOMAXPROCS.
//
// A paced step breaks when connections are refused or dropped, when
// messages are lost, or when the p99 delivery latency from the schedule
// passes Config.SLO; a sweep stops at its first broken step unless
// Config.KeepGoing. When the server's metrics say that it refused
// connections for lack of descriptors (volanogo_connections_refused_total
// with reason open_files) or /proc says it is at its limit, the connection
// failures' examples, and so the step's reason, begin with that cause.
//
// # Shards and processes
//
// A run can be split into shards, each a process (on one machine or
// several) that runs a contiguous block of each step's rooms (ShardRooms:
// whole rooms, so that a room's turn-taking never crosses processes) and
// writes its own document with the run's shared id, the whole run in
// Config and its part in Shard. results.Merge adds them up as one run.
// Shards start their timed phase together in one of two ways: at a wall
// clock time (Config.StartAt, for shards on several machines: set-up,
// then a wait until StartAt, the lateness recorded in
// Shard.ClockOffsetSeconds), or through a Gate. Config.Procs starts N
// shard processes of this program on this machine with the gate of
// StdioGate: each shard reports ready on its standard output when its
// set-up is done, and when all are ready the parent sends every one the
// same start time, a little ahead, on its standard input; if one fails
// first, the others get no start and fail. The parent waits for all of
// them (a shard still running long after the first ended is interrupted,
// then killed), merges their documents and prints one summary; a shard
// that failed adds a failure of kind shard with its exit and its own first
// failure. Only the parent reads the server, over the timed phase from
// the start it sent to the last shard's end. Connect rates are divided
// among the shards.
//
// # Connection churn
//
// Config.Scenario results.ScenarioChurn replaces the chat phase: every
// user repeats connect, Access, EnterRoom, one chat, ExitRoom and
// RoomList, close, Count times, at most ConnectConcurrency sequences at
// once. The document's Churn gives sequences per second, each user's
// first sequence (cold) apart from the others (Latency[sequence], warm),
// and the server's connections, goroutines and descriptors left after the
// run compared with before it, read from its metrics once they settle; a
// leak fails the run.
package load
