package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/floor"
	"github.com/volanogo/volanogo/internal/results"
)

func init() {
	register(newFloorCmd)
	register(newFloorChildCmd)
}

// runFloor is the floor's engine; tests replace it.
var runFloor = floor.Run

type floorOptions struct {
	rooms, users, count int
	engine              string
	json, child         bool
	chatOnly            bool
	stall               time.Duration
	pause               pauseValue
	duration            time.Duration
	seed                int64
}

func newFloorCmd(io *IO) *cobra.Command {
	o := &floorOptions{}
	cmd := &cobra.Command{
		Use:   "floor",
		Short: "Measure the kernel floor: CPU per message of bare system calls",
		Long: `floor measures the least CPU a message of VolanoMark's traffic can cost on this
machine: rooms x users loopback TCP connections, one server thread relaying
each chat to the other users of its room, one client thread whose users take
turns, both calling the kernel directly (epoll, or io_uring for the server)
with nothing else: no protocol, no checks. Then, in the same timed phase,
Mark's exit cascade: in each room user 1 sends ExitRoom and RoomList, the
server sends the ExitRoom indication to those still in the room and the
room list (the packets of a real run, encoded before the timing) to the
leaver, user k leaves once the k-1 before it have, each user closes on its
room list and the server closes on the end of file. --chat-only leaves the
exits out (the pattern of the project's floor.c). It prints each side's CPU
per counted message (sent + received, as Mark counts: the exits add CPU,
not messages) and the messages per second. Any real server or client
costs more; machines differ several times in the cost of a system call, so
compare a server's CPU per message with the floor of the same machine,
measured in the same sitting ('volanogo load --floor' records it in each
result document, and 'volanogo report' shows each run's efficiency: floor /
measured).

With --pause it measures the floor of a paced run instead (volanogo load
--pause): each user sends a chat every pause, the first at a random offset in
[0, pause) from the start as load draws them, until --duration (default 30s);
the server thread relays each chat to the other users of its room and sends
its sender the room's Chat confirm, as a VOLANO server does; the client
thread sends on the schedule and records each chat's delivery latency, from
its send and from its scheduled time, until every chat sent has arrived.
At one chat a second per user most chats wake the server alone, where a
turn-taking floor's waits return many: this is the denominator of a paced
run's CPU (CPU per message, sent + delivered as a paced run counts them, and
each side's share of a processor), which a turn-taking floor is not. It is
not a capacity: its latency is that of one bare thread per side with the
client on the same machine, and like a paced run it has no exit phase (a
paced run's server CPU is read at its drain). The server is epoll only.

When one process cannot hold both ends of every connection within its
open-files limit, the clients run in a child process.

Exit status: 0 measured, 1 it failed (the reason is printed), 2 usage.`,
		Example: `  volanogo floor                      # 50 rooms of 20, about 2,000,000 messages
  volanogo floor --rooms 15 --count 100
  volanogo floor --rooms 950 --count 5  # 19,000 connections: clients in a child
  volanogo floor --engine uring --json
  volanogo floor --rooms 15 --count 100 --chat-only   # as bench/floor.c
  # 19,000 users at a chat a second
  volanogo floor --rooms 9500 --users 2 --pause 1s --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pause.bad != "" {
				return &UsageError{Err: fmt.Errorf("--pause: value is not an integer or a duration (%s)", o.pause.bad)}
			}
			if o.pause.d > 0 && o.chatOnly {
				return &UsageError{Err: errors.New("--chat-only: a paced floor has no exit phase to leave out")}
			}
			f, err := runFloor(cmd.Context(), floor.Spec{
				Rooms: o.rooms, Users: o.users, Count: o.count, Engine: o.engine,
				Child: o.child, StallTimeout: o.stall, ChatOnly: o.chatOnly,
				Pause: o.pause.d, Duration: o.duration, Seed: o.seed,
			})
			if err != nil {
				return floorExit(err)
			}
			if o.json {
				b, err := json.MarshalIndent(f, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(io.Out, "%s\n", b)
				return err
			}
			floorLines(io.Out, f)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.rooms, "rooms", campaign.DefaultRooms, "rooms")
	fl.IntVar(&o.users, "users", floor.DefaultUsers, "users per room (at least 2)")
	fl.IntVar(&o.count, "count", 0, "messages each user sends (0: about 2,000,000 messages in all, at least 1 each)")
	fl.StringVar(&o.engine, "engine", floor.EngineEpoll, "the server's: epoll or uring (io_uring)")
	fl.BoolVar(&o.chatOnly, "chat-only", false, "leave out the exit phase: the timing ends with the last chat, as floor.c's")
	fl.BoolVar(&o.json, "json", false, "print the floor as JSON (the result document's environment.floor entry)")
	fl.BoolVar(&o.child, "child", false, "run the clients in a child process even when one process could hold both sides")
	_ = fl.MarkHidden("child")
	fl.DurationVar(&o.stall, "stall-timeout", floor.DefaultStallTimeout, "fail when the clients receive nothing for this long")
	_ = fl.MarkHidden("stall-timeout")
	fl.Var(&o.pause, "pause", "a paced floor: each user's pause between chats, seconds or a duration such as 250ms (0: turn-taking)")
	fl.DurationVar(&o.duration, "duration", 0, "a paced floor's schedule (0: 30s)")
	fl.Int64Var(&o.seed, "seed", 0, "seed of the paced users' random offsets (0: from the clock)")
	_ = fl.MarkHidden("seed")
	return cmd
}

// newFloorChildCmd is the hidden command that runs the clients of a floor
// in a child process (internal/floor).
func newFloorChildCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:    "floor-child",
		Short:  "Run the clients of 'volanogo floor' in a child process (spec and start on standard input)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return floorExit(floor.RunChild(cmd.Context(), io.In, io.Out))
		},
	}
}

// floorExit maps the floor's errors to the command's.
func floorExit(err error) error {
	var ce *floor.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &UsageError{Err: err}
	case errors.Is(err, floor.ErrInterrupted):
		return &ExitError{Code: exitInterrupted}
	}
	return err
}

// loadFloor is load --floor's measurement (campaign.Config.Floor): an
// epoll floor of the step's rooms and users, of the run's count when that
// is fewer messages than the floor's default (floor.AutoCount), printed on
// w as it is measured. A paced run's (pause above 0) is a paced floor of
// the run's pause, for the run's duration (else count × pause, else the
// paced floor's default).
func loadFloor(w io.Writer, count int, pause, duration time.Duration) func(ctx context.Context, rooms, users int) (results.Floor, error) {
	return func(ctx context.Context, rooms, users int) (results.Floor, error) {
		spec := floor.Spec{Rooms: rooms, Users: users, Count: floor.AutoCount(rooms, users)}
		switch {
		case pause > 0:
			spec.Count, spec.Pause, spec.Duration = 0, pause, duration
			if duration == 0 && count > 0 {
				spec.Duration = time.Duration(count) * pause
			}
		case count > 0:
			spec.Count = min(spec.Count, count)
		}
		f, err := runFloor(ctx, spec)
		if err == nil {
			floorLines(w, f)
		}
		return f, err
	}
}

// floorLines prints a floor as load's summary prints a run.
func floorLines(w io.Writer, f results.Floor) {
	if f.Paced != nil {
		pacedFloorLines(w, f)
		return
	}
	where := ""
	if !f.Exits {
		where = ", chats only"
	}
	if f.ChildProcess {
		where += ", clients in a child process"
	}
	fmt.Fprintf(w, "Kernel floor (%s%s): %d rooms, %d connections, %d messages of %d bytes in %.3f seconds\n",
		f.Engine, where, f.Rooms, f.Connections, f.Messages, f.MessageBytes, f.ElapsedSeconds)
	fmt.Fprintf(w, "  %.0f messages per second; server %s, client %s per message\n",
		f.Throughput, micros(f.ServerCPUPerMessageMicros), micros(f.ClientCPUPerMessageMicros))
}

func micros(us float64) string {
	if us <= 0 {
		return "- µs"
	}
	return fmt.Sprintf("%.2f µs", us)
}

// pacedFloorLines prints a paced floor: its schedule, its counts, each
// side's CPU per message and share of the machine, and the delivery
// latency.
func pacedFloorLines(w io.Writer, f results.Floor) {
	p := f.Paced
	where := ""
	if f.ChildProcess {
		where = ", clients in a child process"
	}
	pause := time.Duration(p.PauseSeconds * float64(time.Second))
	dur := time.Duration(p.DurationSeconds * float64(time.Second))
	fmt.Fprintf(w, "Paced kernel floor (%s, a chat every %s per user for %s%s): %d rooms, %d connections\n",
		f.Engine, pause, dur, where, f.Rooms, f.Connections)
	fmt.Fprintf(w, "  %d chats sent, %d delivered (%d messages of %d bytes, and a confirm per chat) in %.3f seconds\n",
		p.Sent, p.Delivered, f.Messages, f.MessageBytes, f.ElapsedSeconds)
	n := float64(runtime.NumCPU())
	fmt.Fprintf(w, "  %.0f messages per second; server %s, client %s per message\n",
		f.Throughput, micros(f.ServerCPUPerMessageMicros), micros(f.ClientCPUPerMessageMicros))
	fmt.Fprintf(w, "  server %.1f%%, client %.1f%% of a processor (%.1f%% and %.1f%% of this machine's %d)\n",
		p.ServerCPUPercent, p.ClientCPUPercent, p.ServerCPUPercent/n, p.ClientCPUPercent/n, int(n))
	if p.ServerWakeups > 0 {
		fmt.Fprintf(w, "  the server woke %d times (%.2f chats a wake-up)\n", p.ServerWakeups, float64(p.Sent)/float64(p.ServerWakeups))
	}
	for _, h := range []struct {
		name string
		h    *results.Histogram
	}{{"from the send", p.Delivery}, {"from the schedule", p.DeliveryScheduled}} {
		if h.h == nil || h.h.Count == 0 {
			continue
		}
		fmt.Fprintf(w, "  delivery latency %-17s p50 %s, p99 %s, p99.9 %s, max %s\n", h.name,
			results.FormatNanos(h.h.P50), results.FormatNanos(h.h.P99), results.FormatNanos(h.h.P999), results.FormatNanos(h.h.Max))
	}
}
