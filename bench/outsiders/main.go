// Command outsiders puts other people into the rooms a VolanoMark run uses:
// users who enter Room1..RoomN, chat a few times, leave and come back, and
// one who enters Room1 and never reads (a server that bounds what waits for
// a slow reader closes it). Run it beside `volanogo load` against the same
// server to check that the run completes with exact totals for its own
// users and counts the others apart.
//
//	go run ./bench/outsiders --target 127.0.0.1:8000 --duration 60s &
//	volanogo load --host 127.0.0.1 --port 8000 -rooms 50
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

type counts struct {
	visits, chats, exits, errors atomic.Int64
}

func main() {
	target := flag.String("target", "127.0.0.1:8000", "chat server address")
	rooms := flag.Int("rooms", 5, "outside users visit Room1..Room<rooms>")
	perRoom := flag.Int("per-room", 2, "outside users per room")
	chats := flag.Int("chats", 3, "chats per visit")
	stay := flag.Duration("stay", 500*time.Millisecond, "time in the room per visit, spread over its chats")
	duration := flag.Duration("duration", 60*time.Second, "how long to keep visiting")
	sleeper := flag.Bool("sleeper", true, "also put one never-reading user into Room1")
	flag.Parse()
	if *rooms <= 0 || *perRoom <= 0 || *chats < 0 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "outsiders: --rooms, --per-room and --duration must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	var c counts
	var wg sync.WaitGroup
	sleeperOut := make(chan string, 1)
	if *sleeper {
		wg.Add(1)
		go func() { defer wg.Done(); sleeperOut <- sleep(ctx, *target) }()
	}
	for r := 1; r <= *rooms; r++ {
		for i := 1; i <= *perRoom; i++ {
			wg.Add(1)
			go func(room, name string) {
				defer wg.Done()
				for ctx.Err() == nil {
					if err := visit(ctx, *target, room, name, *chats, *stay, &c); err != nil && ctx.Err() == nil {
						c.errors.Add(1)
						fmt.Fprintf(os.Stderr, "outsiders: %s in %s: %v\n", name, room, err)
						time.Sleep(100 * time.Millisecond)
					}
				}
			}(fmt.Sprintf("Room%d", r), fmt.Sprintf("Visitor%d_%d", r, i))
		}
	}
	wg.Wait()
	fmt.Printf("Outside visits     = %d (%d chats, %d exits, %d errors)\n", c.visits.Load(), c.chats.Load(), c.exits.Load(), c.errors.Load())
	if *sleeper {
		fmt.Printf("Never-reading user = %s\n", <-sleeperOut)
	}
	if c.errors.Load() > 0 {
		os.Exit(1)
	}
}

func dial(ctx context.Context, target, room, name string, rcvbuf int) (net.Conn, *protocol.Reader, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { setReceiveBuffer(fd, rcvbuf) })
		}
	}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, nil, err
	}
	rd := protocol.NewReader(bufio.NewReader(conn), 0)
	fail := func(err error) (net.Conn, *protocol.Reader, error) { conn.Close(); return nil, nil, err }
	if err := send(conn, &protocol.Access{Type: protocol.Request, DefaultRoom: room, AppletVersion: results.MarkVersion,
		DocumentBase: "http://www.volano.com/chat.html", CodeBase: "http://chat.volano.net/vcclient"}); err != nil {
		return fail(err)
	}
	if err := await(conn, rd, protocol.IDAccess, protocol.Confirm); err != nil {
		return fail(fmt.Errorf("access: %w", err))
	}
	if err := send(conn, &protocol.EnterRoom{Type: protocol.Request, RoomName: room, UserName: name, Profile: "an outside user"}); err != nil {
		return fail(err)
	}
	if err := await(conn, rd, protocol.IDEnterRoom, protocol.Confirm); err != nil {
		return fail(fmt.Errorf("enter room: %w", err))
	}
	return conn, rd, nil
}

// visit enters the room, chats there while reading everything, and leaves.
func visit(ctx context.Context, target, room, name string, chats int, stay time.Duration, c *counts) error {
	conn, rd, err := dial(ctx, target, room, name, 0)
	if err != nil {
		return err
	}
	defer conn.Close()
	c.visits.Add(1)
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, err := rd.Next(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	gap := stay / time.Duration(chats+1)
	for i := 0; i < chats; i++ {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return err
		case <-time.After(gap/2 + rand.N(gap+1)):
		}
		if err := send(conn, &protocol.Chat{Type: protocol.Request, RoomName: room, UserName: name, Text: "hello from outside the run"}); err != nil {
			return err
		}
		c.chats.Add(1)
	}
	if err := send(conn, &protocol.ExitRoom{Type: protocol.Request, RoomName: room, UserName: name}); err != nil {
		return err
	}
	c.exits.Add(1)
	return nil
}

// sleep enters Room1 and never reads until the end, then says whether the
// server closed the connection meanwhile.
func sleep(ctx context.Context, target string) string {
	conn, _, err := dial(ctx, target, "Room1", "Sleeper", 4096)
	if err != nil {
		return "could not enter: " + err.Error()
	}
	defer conn.Close()
	<-ctx.Done()
	// Drain what the kernel holds; a closed connection ends in EOF or a reset.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	var ne net.Error
	switch {
	case err == nil || errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("closed by the server (%d bytes were still to read)", n)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("still open at the end (%d bytes read in 5 s)", n)
	default:
		return fmt.Sprintf("ended with %v after %d bytes", err, n)
	}
}

func send(conn net.Conn, p protocol.Packet) error {
	b, err := p.AppendPacket(nil)
	if err != nil {
		return err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Write(b)
	return err
}

func await(conn net.Conn, rd *protocol.Reader, id protocol.ID, typ protocol.Type) error {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = conn.SetReadDeadline(time.Time{}) }()
	for {
		f, err := rd.Next()
		if err != nil {
			return err
		}
		if f.ID == id && f.Type == typ {
			return nil
		}
	}
}
