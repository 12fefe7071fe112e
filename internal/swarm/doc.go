// Package swarm is volanogo's client swarm: VolanoMark's client (the
// original's COM.volano.Mark, protocol sheet §10) rebuilt, wire-compatible,
// so that it measures volanogo's server, the original Java server or any
// server that speaks the VOLANO protocol. Run makes one run of the client
// against one target and returns what it measured as a results.Document.
// It writes no file, starts no process, reads no flag and prints nothing:
// an Observer learns of its phases (and decides when its timed phase
// starts), and the caller (internal/campaign) adds what the run was and
// what it knows of the server.
//
// # A run
//
// A run has rooms Room<n> (Spec.Rooms: a whole step, or one shard's block
// of it), each with users Mark1…MarkN, one connection each. The set-up is
// not timed: rooms connect in parallel (at most Spec.ConnectConcurrency at
// a time, at most Spec.ConnectRate new connections per second, source
// addresses round-robin from Spec.Bind), the users of one room strictly
// in order, each sending Access (version 2.13.4, Mark's documentBase and
// codeBase, volanogo's platform in the JVM property slots) and EnterRoom
// with Mark's profile, until every user has seen the room full (Mark's
// enterCount). Every wait has a deadline (Spec.StallTimeout).
//
// The timed phase starts when every room is ready and the observer's
// Start says so. In turn-taking mode (pause 0) user 1 of each room sends
// the room's first chat; every user counts the chats of its room and sends
// the next when its count says it is its turn, until it has sent count;
// then user 1 leaves (ExitRoom, RoomList), each user k leaves once k−1
// users have left and it has had every chat, and a user is done at its
// RoomList confirm. The phase ends when every user is done. In pause mode
// (open loop) every user sends one chat every pause from a random offset
// in [0, pause), on an absolute schedule whatever the replies, until count
// or Spec.Duration; then the run waits for the chats in flight (the timed
// phase ends there) and every user leaves.
//
// # Cost per message
//
// Each connection has one goroutine. In turn-taking it reads and sends: a
// chat is pre-encoded (its number patched in), and exactly one chat per
// room is in flight, so the sender writes it from its reading goroutine.
// Over TCP the goroutine's loop runs inside one syscall.RawConn.Read
// callback, reading the socket with read(2) itself: after a read that
// drained the socket it waits for readiness instead of trying one more
// read, so a received chat costs one read(2). Packets are split by
// protocol.Reader and chats viewed by protocol.ParseChat without
// allocating. Counts are the goroutine's own until the end; the only
// shared writes per chat are the room's slot of that chat (atomic: its
// send time and its arrivals, for the fan-out) and, per batch of 32, a
// histogram shard under its lock.
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
// with Spec.StrictOrder. Mark's count turn rule goes on through
// reordering, and a user leaves only once it has had every chat of its
// room. Only the run's own users count: chats, entries, exits, whispers,
// beeps and private sessions of other users sharing a room, and packets of
// kinds no run asks for, are counted apart (a failure only with
// Spec.Strict; outside.go). In a room that stalled, a chat a receiver
// lacks is lost only where a later chat of the room reached it; the ones
// after were in flight (a stopped server holds them). Totals that differ from rooms ×
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
// spread between them), the latency of every indication from its send
// (turn-taking: the room's slot of the chat; pause mode: the sender's
// record of that send, both from the actual send and from the scheduled
// one, which corrects for coordinated omission), the turn time (from one
// send of a room to the next), the connect time, a per-second timeline,
// the client's CPU (getrusage) and peak RSS over the timed phase, and the
// kernel's TCP counters over it.
//
// # Private chat
//
// Spec.Scenario results.ScenarioPrivate is the game-server vendor's
// private-message test (private.go): the users of a room in pairs, each
// pair in a private session opened with EnterPrivate in the set-up, each
// user sending its partner a private chat every pause on the paced
// schedule and echoing its partner's back (In:Out 1:2), with the paced
// ledger and latency, and the echo's round trip.
//
// # Connection churn
//
// Spec.Scenario results.ScenarioChurn replaces the chat phase: every user
// repeats connect, Access, EnterRoom, one chat, ExitRoom and RoomList,
// close, Count times, at most ConnectConcurrency sequences at once. The
// document's Churn gives sequences per second and each user's first
// sequence (cold) apart from the others (Latency[sequence], warm); whether
// the server kept what the sequences left behind is for the caller, who
// reads the server, to check.
package swarm
