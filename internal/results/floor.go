package results

import (
	"math"
	"time"
)

// Floor is the kernel floor of VolanoMark's traffic on a machine, measured
// by `volanogo floor` (or `volanogo load --floor` before its runs): the same
// pattern as a turn-taking run (rooms × users loopback TCP connections, each
// chat relayed by one server thread to the other users of its room, the next
// user speaking when the previous chat reaches it) with nothing else, one
// thread per side. Any real server or client spends more CPU per message
// than its side of the floor; machines differ several times in the cost of a
// system call, so a figure divided by the floor of the same machine
// compares across machines (see Efficiency).
type Floor struct {
	// Engine is the floor server's: "epoll" or "uring".
	Engine      string `json:"engine"`
	Rooms       int    `json:"rooms"`
	Users       int    `json:"users"`
	Connections int    `json:"connections"`
	// Count is the messages each user sent; Messages the counted messages,
	// sent plus received as Mark counts them (rooms × users × count × users).
	Count    int   `json:"count"`
	Messages int64 `json:"messages"`
	// MessageBytes is the size of one chat (80).
	MessageBytes int `json:"message_bytes"`
	// ElapsedSeconds is the clients' timed phase; Throughput is Messages
	// over it (messages per second).
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Throughput     float64 `json:"throughput"`
	// ServerCPUSeconds and ClientCPUSeconds are each side's thread CPU
	// time; the per-message figures divide them by Messages (µs).
	ServerCPUSeconds          float64 `json:"server_cpu_seconds"`
	ClientCPUSeconds          float64 `json:"client_cpu_seconds"`
	ServerCPUPerMessageMicros float64 `json:"server_cpu_per_message_us"`
	ClientCPUPerMessageMicros float64 `json:"client_cpu_per_message_us"`
	// ChildProcess is true when the clients ran in a child process (one
	// process could not hold both sides' descriptors).
	ChildProcess bool `json:"child_process,omitempty"`
	// Exits is true when the timed phase included Mark's exit cascade, as
	// a run's does: after a room's last chat each user in turn sends
	// ExitRoom and RoomList, the server relays the ExitRoom indication to
	// the users still in the room and answers the room list, and both
	// ends close. A floor without it (volanogo floor --chat-only, and
	// every floor recorded before it had one) is the pattern of floor.c
	// and charges a run's exits to the run.
	Exits bool `json:"exits,omitempty"`
	// When is the start of the measurement.
	When time.Time `json:"when"`
	// Paced is set for the floor of a paced run (volanogo floor --pause):
	// each user sends a chat every pause on its own schedule instead of
	// taking turns, so that most chats wake the server alone. Its Count is
	// 0 and its Messages are the chats sent plus those delivered (a paced
	// run's count); it has no exit phase (a paced run's server CPU is read
	// at the drain, before its users leave).
	Paced *FloorPaced `json:"paced,omitempty"`
}

// FloorPaced is what the floor of a paced run measured: its schedule, the
// chats sent and delivered, the delivery latency, and each side's share of
// a processor.
type FloorPaced struct {
	// PauseSeconds is each user's pause between chats; DurationSeconds is
	// the schedule's length: the users' first chats are at random offsets
	// in [0, pause) from the start, as volanogo load schedules them, and
	// no chat is scheduled past the duration.
	PauseSeconds    float64 `json:"pause_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Confirms is true when the server sent each chat's sender a Chat
	// confirm after relaying it, as a VOLANO server does (protocol sheet
	// §10.2): one more send per chat, not a counted message.
	Confirms bool `json:"confirms,omitempty"`
	// Sent is the chats sent; Delivered the chats received, users - 1 for
	// each chat sent once the run has drained.
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	// Delivery is the latency from each chat's send to its receipt by
	// each other user of its room; DeliveryScheduled from the time the
	// schedule had it sent (the larger when the client falls behind).
	Delivery          *Histogram `json:"delivery,omitempty"`
	DeliveryScheduled *Histogram `json:"delivery_scheduled,omitempty"`
	// ServerCPUPercent and ClientCPUPercent are each side's thread CPU
	// over the elapsed time (100: one processor busy).
	ServerCPUPercent float64 `json:"server_cpu_percent"`
	ClientCPUPercent float64 `json:"client_cpu_percent"`
	// ServerWakeups is the server thread's waits (epoll_wait) that
	// returned events: Sent over it is the chats a wake-up served, near 1
	// when each chat wakes the server alone.
	ServerWakeups int64 `json:"server_wakeups"`
}

// EfficiencyFigures is a run's CPU per message against its machine's
// floor: floor ÷ measured for each side (1 would be as cheap as the
// floor; 0.25 four times dearer). A side is 0 when unknown.
type EfficiencyFigures struct {
	Server, Client float64
	// Floor is the floor the figures are relative to. When the document
	// carries several readings of it (Readings > 1), its per-message
	// figures are their mean.
	Floor Floor
	// Readings is the number of the document's floors averaged into
	// Floor: those of the same kind, phase, engine, rooms and users,
	// such as a floor measured before a run and again after it
	// (bench/engines.sh records both, because a shared machine's floor
	// moves between two minutes).
	Readings int
	// ServerDrift and ClientDrift are, with several readings, each
	// side's last reading over its first (by When): how far the floor
	// moved while the run was measured. 0 with one reading.
	ServerDrift, ClientDrift float64
}

// Efficiency is d's efficiency against the floor recorded in its
// environment whose room count is closest to the run's, among the floors
// of its kind (a paced floor for a paced run, a turn-taking one for a
// turn-taking run) when there are any, then among those
// with the exit phase when there are any (a run's timing includes its
// exits: a floor without them is the second choice), an epoll floor
// before an io_uring one at the same distance, then the first recorded.
// ok is false when d carries no floor or neither side's CPU per message
// is known.
func Efficiency(d *Document) (EfficiencyFigures, bool) {
	f, ok := closestFloor(d.Environment.Floor, d.Config.Rooms, d.Config.PauseSeconds > 0)
	if !ok {
		return EfficiencyFigures{}, false
	}
	var e EfficiencyFigures
	e.Floor, e.Readings, e.ServerDrift, e.ClientDrift = meanReadings(d.Environment.Floor, f)
	f = e.Floor
	ratio := func(floor, measured float64) float64 {
		if floor <= 0 || measured <= 0 || math.IsNaN(measured) || math.IsInf(measured, 0) {
			return 0
		}
		return floor / measured
	}
	if d.Server != nil {
		e.Server = ratio(f.ServerCPUPerMessageMicros, d.Server.CPUPerMessageMicros)
	}
	e.Client = ratio(f.ClientCPUPerMessageMicros, d.Client.CPUPerMessageMicros)
	return e, e.Server > 0 || e.Client > 0
}

// sameFloor reports whether a and b are readings of one floor: the same
// kind (paced or turn-taking, with the same pause), phase, engine, rooms,
// users and count.
func sameFloor(a, b Floor) bool {
	if (a.Paced != nil) != (b.Paced != nil) || a.Paced != nil && a.Paced.PauseSeconds != b.Paced.PauseSeconds {
		return false
	}
	return a.Exits == b.Exits && a.Engine == b.Engine && a.Rooms == b.Rooms && a.Users == b.Users && a.Count == b.Count
}

// meanReadings returns f with each side's CPU per message (and the
// throughput) replaced by the mean of the readings of the same floor
// among floors that measured it, the number of those readings, and each
// side's drift (last reading over first, by When; 0 with one reading).
func meanReadings(floors []Floor, f Floor) (Floor, int, float64, float64) {
	var readings []Floor
	for _, g := range floors {
		if sameFloor(f, g) && (g.ServerCPUPerMessageMicros > 0 || g.ClientCPUPerMessageMicros > 0) {
			readings = append(readings, g)
		}
	}
	if len(readings) < 2 {
		return f, 1, 0, 0
	}
	first, last := readings[0], readings[0]
	for _, g := range readings[1:] {
		if g.When.Before(first.When) {
			first = g
		}
		if !g.When.Before(last.When) {
			last = g
		}
	}
	mean := func(get func(Floor) float64) float64 {
		sum, n := 0.0, 0
		for _, g := range readings {
			if v := get(g); v > 0 {
				sum += v
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	drift := func(get func(Floor) float64) float64 {
		if a, b := get(first), get(last); a > 0 && b > 0 {
			return b / a
		}
		return 0
	}
	server := func(g Floor) float64 { return g.ServerCPUPerMessageMicros }
	client := func(g Floor) float64 { return g.ClientCPUPerMessageMicros }
	f.ServerCPUPerMessageMicros = mean(server)
	f.ClientCPUPerMessageMicros = mean(client)
	f.Throughput = mean(func(g Floor) float64 { return g.Throughput })
	return f, len(readings), drift(server), drift(client)
}

func closestFloor(floors []Floor, rooms int, paced bool) (Floor, bool) {
	best, found := Floor{}, false
	bestDist := 0
	for _, f := range floors {
		if f.ServerCPUPerMessageMicros <= 0 && f.ClientCPUPerMessageMicros <= 0 {
			continue
		}
		dist := f.Rooms - rooms
		if dist < 0 {
			dist = -dist
		}
		same, bestSame := (f.Paced != nil) == paced, (best.Paced != nil) == paced
		switch {
		case !found, same && !bestSame:
			best, bestDist, found = f, dist, true
		case !same && bestSame:
		case f.Exits && !best.Exits,
			f.Exits == best.Exits && dist < bestDist,
			f.Exits == best.Exits && dist == bestDist && best.Engine != "epoll" && f.Engine == "epoll":
			best, bestDist, found = f, dist, true
		}
	}
	return best, found
}
