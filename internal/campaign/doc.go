// Package campaign runs `volanogo load`'s campaigns: the steps of a sweep
// (room counts), each once per server processor count, each with its
// runs, under the Volano Report's run rule; against one server, or a
// fresh one per run that it starts and stops; in this process, or in
// shard processes behind one start barrier. It is the only code of the
// client that starts processes. Each run is one swarm.Run; the campaign
// adds what the run was (run id, label, configuration, machine) and what
// it read of the server, and hands every run to a Sink, so that the caller
// (internal/cli) owns the files, the terminal and the exit status.
//
// # Runs and steps
//
// Config.Steps runs a scalability test, one step per room count; each step
// has Config.Runs runs, of which the first Config.Discard are discarded;
// Step applies the run rule (results.DefaultRunRule: the average of the
// best two of the next three) and gives the median. With Config.Serve or
// Config.ServerCmd every run gets a fresh server on a free loopback port,
// stopped after it (SIGTERM, then SIGKILL). Config.ServerCPUs adds a
// dimension: each step runs once per processor count, the server started
// on the first n processors this process may use (CPU affinity taken by
// the forking thread, so that every thread of the server inherits it, as
// taskset does) with GOMAXPROCS=n; the documents record it in
// Config.ServerCPUs, Server.CPUs and Server.GOMAXPROCS.
//
// The server is read around each run's timed phase, as the swarm's
// observer learns of it: from its Prometheus metrics (Config.ServerMetrics,
// or the metrics port of a server started with Config.Serve) or from
// /proc/<pid> (Config.ServerCmd). A server that cannot be read is a
// warning in the document. A churn run is followed by a check of what the
// server kept (connections, goroutines, descriptors), read until they
// settle; a leak fails the run. When the server's metrics say that it
// refused connections for lack of descriptors, or /proc says it is at its
// limit, the connection failures' examples begin with that cause.
//
// A paced step breaks when connections are refused or dropped, when
// messages are lost, or when the p99 delivery latency from the schedule
// passes the SLO; a sweep stops at its first broken step unless
// Config.KeepGoing.
//
// # Shards and processes
//
// A run can be split into shards, each running a contiguous block of each
// step's rooms (ShardRooms: whole rooms, so that a room's turn-taking
// never crosses processes), with the run's shared id; results.Merge adds
// them up as one run. Shards on several machines are started by the user
// (Config.ShardIndex and ShardCount) and start their timed phase together
// at a wall-clock time (Config.StartAt), recording their lateness in
// Shard.ClockOffsetSeconds; `volanogo report` merges their documents.
//
// Config.Procs starts N shard processes of this program on this machine
// (Config.ShardCommand, by default `volanogo shard`), each with its typed
// ShardSpec on its standard input, and speaks the shard protocol of
// internal/handshake with them: each reports ready when set up, the
// campaign sends every one the same start time a little ahead, each
// reports its progress, the end of its timed phase and its document on
// its standard output. If one fails before the start, the others get no
// start and fail. The campaign waits for all of them (a shard still
// running long after the first ended is interrupted, then killed), merges
// their documents and hands one to the sink; a shard that failed adds a
// failure of kind shard with its exit and its own first failure. Only the
// campaign reads the server, over the timed phase from the start it sent
// to the last shard's end. Connect rates are divided among the shards,
// and each shard gets GOMAXPROCS = processors / N unless GOMAXPROCS is
// set.
//
// Every process the campaign starts (server or shard) has a process group
// of its own, so that the terminal's SIGINT reaches the campaign alone:
// the campaign then interrupts its shards once (they write their
// documents, marked interrupted) and stops its server. On Linux each child
// is also killed with the campaign (a kill -9 included); a shard stops
// when its standard input ends after the start (its parent is gone).
package campaign
