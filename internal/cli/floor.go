package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
}

func newFloorCmd(io *IO) *cobra.Command {
	o := &floorOptions{}
	cmd := &cobra.Command{
		Use:   "floor",
		Short: "Measure this machine's kernel floor for VolanoMark's traffic (CPU per message of bare system calls)",
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
not messages) and the messages per second. Any real server or client costs more; machines differ several times
in the cost of a system call, so compare a server's CPU per message with the
floor of the same machine, measured in the same sitting ('volanogo load
--floor' records it in each result document, and 'volanogo report' shows
each run's efficiency: floor / measured).

When one process cannot hold both ends of every connection within its
open-files limit, the clients run in a child process.

Exit status: 0 measured, 1 it failed (the reason is printed), 2 usage.`,
		Example: `  volanogo floor                      # 50 rooms of 20, about 2,000,000 messages
  volanogo floor --rooms 15 --count 100
  volanogo floor --rooms 950 --count 5  # 19,000 connections: the clients in a child process
  volanogo floor --engine uring --json
  volanogo floor --rooms 15 --count 100 --chat-only   # as ../shared/bench/floor.c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := runFloor(cmd.Context(), floor.Spec{
				Rooms: o.rooms, Users: o.users, Count: o.count, Engine: o.engine,
				Child: o.child, StallTimeout: o.stall, ChatOnly: o.chatOnly,
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
// w as it is measured.
func loadFloor(w io.Writer, count int) func(ctx context.Context, rooms, users int) (results.Floor, error) {
	return func(ctx context.Context, rooms, users int) (results.Floor, error) {
		n := floor.AutoCount(rooms, users)
		if count > 0 {
			n = min(n, count)
		}
		f, err := runFloor(ctx, floor.Spec{Rooms: rooms, Users: users, Count: n})
		if err == nil {
			floorLines(w, f)
		}
		return f, err
	}
}

// floorLines prints a floor as load's summary prints a run.
func floorLines(w io.Writer, f results.Floor) {
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
