// Package floor measures the kernel floor of VolanoMark's traffic on this
// machine: the CPU that a turn-taking run's system calls cost with nothing
// else around them. It is the pattern of the project's bench/floor.c
// written on raw system calls: rooms × users loopback TCP connections; one
// server thread that waits on them (epoll, or io_uring) and relays each
// chat it reads to the other users of its room; one client thread that
// waits on the other ends and, when a chat reaches a user whose turn it
// is, sends that user's next one. Then, in the same timing, Mark's exit
// cascade with the packets of a real run (see script), as the timed phase
// of volanogo load has it; Spec.ChatOnly leaves it out, as floor.c does.
// No protocol, no checks, no goroutines in the loops: each side is one
// goroutine locked to its OS thread, calling the kernel directly, so that
// it costs what the C program costs.
//
// Each side's CPU is its thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over
// the run; CPU per message divides it by the messages Mark counts (sent
// plus received: rooms × users × count × users). Any real server or
// client spends more than its side of the floor, and machines differ
// several times in the cost of a system call, so volanogo quotes its
// figures as ratios to the floor measured in the same sitting
// (results.Efficiency).
//
// A paced floor (Spec.Pause) is the floor of a paced run instead: each
// user sends a chat every pause on its own schedule, as volanogo load
// --pause schedules them, for Spec.Duration; the server relays each chat
// and confirms it to its sender; the client records each delivery's
// latency. At a chat a second per user most chats wake the server alone,
// where a turn-taking floor's epoll_wait returns many: the paced floor is
// the denominator of a paced run's CPU, the turn-taking floor is not.
//
// Both sides hold a descriptor per connection. When one process cannot
// hold both within its open-files limit, the clients run in a child
// process (Spec.ChildCommand, `volanogo floor-child`): it connects, tells
// the parent which connection is which, and runs the client thread on the
// parent's signal.
package floor

import (
	"errors"
	"fmt"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// Engines of the floor's server thread.
const (
	EngineEpoll = "epoll"
	EngineURing = "uring"
)

// Defaults and fixed figures of the floor.
const (
	// DefaultUsers is VolanoMark's users per room.
	DefaultUsers = 20
	// MessageBytes is the size of one chat, as floor.c sends it.
	MessageBytes = 80
	// AutoMessages is about how many messages Count 0 makes a floor count.
	AutoMessages = 2_000_000
	// DefaultPacedDuration is a paced floor's schedule when Spec.Duration
	// is 0.
	DefaultPacedDuration = 30 * time.Second
	// DefaultStallTimeout fails a floor whose clients receive nothing for
	// this long, and bounds each wait of the set-up.
	DefaultStallTimeout = 10 * time.Second
	// Reserve is the descriptors a process keeps beyond its sockets when
	// Run decides whether one process holds both sides.
	Reserve = 100
)

// Spec is one measurement of the floor.
type Spec struct {
	// Rooms and Users (default DefaultUsers) make Rooms × Users
	// connections; Count is the messages each user sends (0: AutoCount).
	Rooms, Users, Count int
	// Engine is EngineEpoll (default) or EngineURing.
	Engine string
	// ChatOnly leaves out the exit phase (see script): the timed phase
	// ends with the last chat, as in floor.c. By default it includes
	// Mark's exit cascade, as a run of volanogo load does.
	ChatOnly bool
	// Child runs the clients in a child process even when one process
	// could hold both sides (Run does when it cannot).
	Child bool
	// ChildCommand is the argv of the child (default: this executable and
	// "floor-child"), which runs RunChild.
	ChildCommand []string
	// StallTimeout: see DefaultStallTimeout.
	StallTimeout time.Duration

	// Pause, when above 0, makes the floor paced: each user sends a chat
	// every Pause (the first at a random offset in [0, Pause) from the
	// start) until Duration (default DefaultPacedDuration), the server
	// relays each chat to the other users of its room and sends its
	// sender a Chat confirm, as a VOLANO server does, and the run ends
	// when every chat sent has been delivered. Count must be 0, the
	// engine epoll; there is no exit phase (a paced run's server CPU is
	// read at its drain, before its users leave).
	Pause, Duration time.Duration
	// Seed seeds the paced users' offsets (0: from the clock).
	Seed int64
}

// ConfigError is a spec Run refuses (a usage error).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrUnsupported is returned on systems without the floor (not Linux).
var ErrUnsupported = errors.New("the kernel floor is measured on Linux only")

// ErrInterrupted is returned when the context ended the measurement.
var ErrInterrupted = errors.New("interrupted")

// AutoCount is the count of a floor of rooms × users that counts about
// AutoMessages messages (at least 1): 100 at 50 rooms of 20.
func AutoCount(rooms, users int) int {
	if rooms < 1 || users < 1 {
		return 1
	}
	return max(1, AutoMessages/(rooms*users*users))
}

func (s *Spec) normalize() error {
	if s.Users == 0 {
		s.Users = DefaultUsers
	}
	if s.Engine == "" {
		s.Engine = EngineEpoll
	}
	if s.StallTimeout <= 0 {
		s.StallTimeout = DefaultStallTimeout
	}
	if s.Pause > 0 && s.Duration == 0 {
		s.Duration = DefaultPacedDuration
	}
	switch {
	case s.Pause < 0:
		return &ConfigError{fmt.Errorf("--pause: must not be negative (%s)", s.Pause)}
	case s.Pause == 0 && s.Duration != 0:
		return &ConfigError{errors.New("--duration: a paced floor's only (with --pause)")}
	case s.Pause > 0 && s.Duration < 0:
		return &ConfigError{fmt.Errorf("--duration: must not be negative (%s)", s.Duration)}
	case s.Pause > 0 && s.Count != 0:
		return &ConfigError{errors.New("--count: a paced floor runs for --duration, not a count")}
	case s.Pause > 0 && s.Engine != EngineEpoll:
		return &ConfigError{errors.New("--engine: a paced floor's server is epoll only")}
	}
	switch {
	case s.Rooms < 1:
		return &ConfigError{fmt.Errorf("--rooms: must be at least 1 (%d)", s.Rooms)}
	case s.Users < 2:
		return &ConfigError{fmt.Errorf("--users: must be at least 2 (%d)", s.Users)}
	case s.Count < 0:
		return &ConfigError{fmt.Errorf("--count: must not be negative (%d)", s.Count)}
	case s.Engine != EngineEpoll && s.Engine != EngineURing:
		return &ConfigError{fmt.Errorf("--engine: %q is not epoll or uring", s.Engine)}
	case int64(s.Rooms)*int64(s.Users) > 1<<24:
		return &ConfigError{fmt.Errorf("%d rooms of %d users: too many connections", s.Rooms, s.Users)}
	}
	if s.Pause > 0 {
		s.ChatOnly = true
		if s.Seed == 0 {
			s.Seed = time.Now().UnixNano()
		}
	} else if s.Count == 0 {
		s.Count = AutoCount(s.Rooms, s.Users)
	}
	return nil
}

// pacedFigures is what a paced floor's client measured.
type pacedFigures struct {
	sent, delivered, serverWakes int64
	delivery, deliveryScheduled  *results.Histogram
}

// pacedFloor makes a paced floor's document: its messages are the chats
// sent and delivered, as a paced run counts them.
func pacedFloor(s *Spec, child bool, when time.Time, serverCPU, clientCPU, elapsed float64, p *pacedFigures) results.Floor {
	total := p.sent + p.delivered
	f := results.Floor{
		Engine: s.Engine, Rooms: s.Rooms, Users: s.Users, Connections: s.Rooms * s.Users,
		Messages: total, MessageBytes: MessageBytes,
		ElapsedSeconds: elapsed, ServerCPUSeconds: serverCPU, ClientCPUSeconds: clientCPU,
		ServerCPUPerMessageMicros: results.CPUPerMessage(serverCPU, total),
		ClientCPUPerMessageMicros: results.CPUPerMessage(clientCPU, total),
		ChildProcess:              child, When: when,
		Paced: &results.FloorPaced{
			PauseSeconds: s.Pause.Seconds(), DurationSeconds: s.Duration.Seconds(), Confirms: true,
			Sent: p.sent, Delivered: p.delivered, Delivery: p.delivery, DeliveryScheduled: p.deliveryScheduled,
			ServerWakeups: p.serverWakes,
		},
	}
	if elapsed > 0 {
		f.Throughput = float64(total) / elapsed
		f.Paced.ServerCPUPercent = serverCPU / elapsed * 100
		f.Paced.ClientCPUPercent = clientCPU / elapsed * 100
	}
	return f
}

// figures makes the floor's document from what the two sides measured.
func figures(s *Spec, child bool, when time.Time, serverCPU, clientCPU, elapsed float64) results.Floor {
	conns := s.Rooms * s.Users
	total := int64(conns) * int64(s.Count) * int64(s.Users)
	f := results.Floor{
		Engine: s.Engine, Rooms: s.Rooms, Users: s.Users, Connections: conns,
		Count: s.Count, Messages: total, MessageBytes: MessageBytes,
		ElapsedSeconds: elapsed, ServerCPUSeconds: serverCPU, ClientCPUSeconds: clientCPU,
		ServerCPUPerMessageMicros: results.CPUPerMessage(serverCPU, total),
		ClientCPUPerMessageMicros: results.CPUPerMessage(clientCPU, total),
		ChildProcess:              child, When: when, Exits: !s.ChatOnly,
	}
	if elapsed > 0 {
		f.Throughput = float64(total) / elapsed
	}
	return f
}
