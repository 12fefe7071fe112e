// Command natsgo is Mark's turn-taking workload written with nats.go, the
// NATS project's Go client, for one measurement: what a library client
// costs per message beside volanogo's own (bench/brokers/natsbench.sh).
// Rooms of users, one connection and one subscription each, the NATS
// echo on; each user publishes when the room's count says it is its
// turn, as volanogo load does; it prints the client's CPU per message
// (sent plus received, echoes left out) over the timed phase.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	url := flag.String("url", nats.DefaultURL, "the NATS server")
	rooms := flag.Int("rooms", 1, "rooms")
	users := flag.Int("users", 20, "users per room")
	count := flag.Int("count", 100, "chats each user sends")
	flag.Parse()
	if err := run(*url, *rooms, *users, *count); err != nil {
		fmt.Fprintln(os.Stderr, "natsgo:", err)
		os.Exit(1)
	}
}

// user is one user: its place in the room and what it has seen.
type user struct {
	nc       *nats.Conn
	subject  string
	num      int // 0-based
	users    int
	count    int
	seen     int // the room's chats this user has seen, its own included
	sent     int
	received int
	payload  []byte
	self     []byte // the start of this user's own publications
	done     chan struct{}
}

// handle is the subscription's handler: count the chat, and send when
// the count says it is this user's turn.
func (u *user) handle(m *nats.Msg) {
	u.seen++
	if !bytes.HasPrefix(m.Data, u.self) {
		u.received++
	}
	if u.seen == u.users*u.count {
		close(u.done)
		return
	}
	if u.seen%u.users == u.num && u.sent < u.count {
		u.send()
	}
}

func (u *user) send() {
	u.sent++
	text := fmt.Appendf(u.payload[:0], "CMark%d %09d %09d 123456789 123456789 123456789 123456789 ", u.num+1, u.num+1, u.sent)
	u.payload = text
	if err := u.nc.Publish(u.subject, text); err != nil {
		fmt.Fprintln(os.Stderr, "natsgo: publish:", err)
		os.Exit(1)
	}
}

func run(url string, rooms, users, count int) error {
	var all []*user
	for r := 1; r <= rooms; r++ {
		subject := "Room" + strconv.Itoa(r)
		for j := 0; j < users; j++ {
			nc, err := nats.Connect(url)
			if err != nil {
				return err
			}
			defer nc.Close()
			u := &user{nc: nc, subject: subject, num: j, users: users, count: count, done: make(chan struct{}), payload: make([]byte, 0, 80),
				self: []byte("CMark" + strconv.Itoa(j+1) + " ")}
			if _, err := nc.Subscribe(subject, u.handle); err != nil {
				return err
			}
			if err := nc.Flush(); err != nil {
				return err
			}
			all = append(all, u)
		}
	}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	for i := 0; i < len(all); i += users {
		all[i].send()
	}
	deadline := time.After(10 * time.Minute)
	for _, u := range all {
		select {
		case <-u.done:
		case <-deadline:
			return fmt.Errorf("a room stalled")
		}
	}
	elapsed := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	var sent, received int
	for _, u := range all {
		sent += u.sent
		received += u.received
	}
	msgs := sent + received
	fmt.Printf("{\"sent\": %d, \"received\": %d, \"seconds\": %.3f, \"msgs_per_sec\": %.0f, \"client_cpu_per_msg_us\": %.3f}\n",
		sent, received, elapsed.Seconds(), float64(msgs)/elapsed.Seconds(), float64(cpu.Microseconds())/float64(msgs))
	return nil
}
