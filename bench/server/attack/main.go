// Command attack plays hostile peers against a volanogo serve (or any
// VOLANO server) on loopback, for the scripts beside it. Each mode prints
// key=value lines on stdout; every loop is bounded in count and time.
//
//	attack -mode silent    -n 5000            connections that never send a byte
//	attack -mode partial   -n 5000            25 bytes of an Access, then nothing
//	attack -mode malformed -n 10000           an unknown packet id each
//	attack -mode privflood -n 300000 [-self]  EnterPrivate from one connection
//	attack -mode rooms     -n 5000            an Access naming a new 100-character room each
//	attack -mode slow      -duration 30s      a chatting room with clients that never read
//	attack -mode probe     -duration 10s      only the probe room
//	attack -mode trickle   -n 16 [-whole] [-after-access] [-sink whole|reader|refuse]
//	                       64 KiB packets of 21,840 one-byte strings, 1-3 bytes per write
//	attack -mode stray     -n 4               chats to a room the sender never entered
//	attack -mode refused   -n 4000            14 bytes of a packet over --max-packet, again
//	                                          at each close (held connections en masse)
//	attack -mode squat     -n 4000            connections that never send a byte, again at
//	                                          each close (an open-files limit held)
//	attack -mode admit     -n 20              users each trying to get an Access answered
//	                                          (one every 100 ms): how long it takes them
//
// With -probe (the default) a separate room of two users exchanges chats
// at -probe-rate throughout and the delivery latency percentiles are
// printed: probe_p50, probe_p99 (microseconds).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

var (
	addr      = flag.String("addr", "127.0.0.1:8000", "server chat address")
	mode      = flag.String("mode", "probe", "silent, partial, malformed, privflood, rooms, slow, trickle, stray, refused, squat, admit or probe")
	n         = flag.Int("n", 1000, "connections or requests")
	self      = flag.Bool("self", false, "privflood: invite oneself (else the other user)")
	duration  = flag.Duration("duration", 10*time.Second, "probe and slow: how long")
	hold      = flag.Duration("hold", 60*time.Second, "silent and partial: longest wait for the server to close; admit: longest a user tries")
	probe     = flag.Bool("probe", true, "run the latency probe room alongside")
	probeRate = flag.Int("probe-rate", 200, "probe chats per second")
	tag       = flag.String("tag", strconv.Itoa(os.Getpid()), "room-name prefix (distinct per process)")
	sleepers  = flag.Int("sleepers", 4, "slow: clients that never read, each replaced after 2 s")
	linger    = flag.Duration("linger", 0, "rooms: keep the connections open this long after the last")
	whole     = flag.Bool("whole", false, "trickle: send each packet in one write (the reference)")
	afterAcc  = flag.Bool("after-access", false, "trickle: send Access first, then the packets (RoomList requests) on the same connection")
	strayRoom = flag.String("stray-room", "Room1", "stray: the room the chats name (one the attackers never enter)")
	spread    = flag.Duration("spread", 0, "trickle: spread each packet's writes evenly over this long (a packet slower than the server's --access-timeout is closed by it, as the outside tester's were); 0: as fast as the socket takes them")
	sink      = flag.String("sink", "", "trickle: send to a listener of this process instead of -addr, which reads each packet and closes: whole (one wake-up, SO_RCVLOWAT at the packet's size), reader (as volanogo serve reads it with --max-packet 65536: protocol.Reader over SO_RCVLOWAT) or refuse (its first 14 bytes, then -sink-hold unread, as serve's default --max-packet refuses it)")
	sinkHold  = flag.Duration("sink-hold", 10*time.Second, "trickle -sink refuse: how long a refused connection is held unread before its close (serve's --violation-hold)")
)

func main() {
	flag.Parse()
	var pr *prober
	if *probe {
		var err error
		if pr, err = startProbe(); err != nil {
			fail(err)
		}
	}
	start := time.Now()
	var err error
	switch *mode {
	case "silent":
		err = silent(nil)
	case "partial":
		b := encode(access("Partial" + *tag))
		err = silent(b[:25])
	case "malformed":
		err = malformed()
	case "privflood":
		err = privflood()
	case "rooms":
		err = rooms()
	case "slow":
		err = slow()
	case "trickle":
		err = trickle()
	case "stray":
		err = stray()
	case "refused":
		err = refused()
	case "squat":
		err = squat()
	case "admit":
		err = admit()
	case "probe":
		// ends after -duration or at SIGINT/SIGTERM, printing its figures
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		select {
		case <-time.After(*duration):
		case <-sig:
		}
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	fmt.Printf("elapsed_s=%.3f\n", time.Since(start).Seconds())
	if pr != nil {
		pr.stop()
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "attack:", err)
	os.Exit(1)
}

func access(room string) *protocol.Access {
	return &protocol.Access{Type: protocol.Request, DefaultRoom: room, AppletVersion: "2.13.4",
		DocumentBase: "http://www.volano.com/chat.html", CodeBase: "http://chat.volano.net/vcclient",
		JavaVendor: "attack", JavaVendorURL: "http://example.invalid", JavaVersion: "go",
		JavaClassVersion: "0", OSName: "Linux", OSVersion: "6", OSArch: "amd64"}
}

func encode(p protocol.Packet) []byte {
	b, err := p.AppendPacket(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// user is one protocol connection.
type user struct {
	c net.Conn
	r *protocol.Reader
}

func dialUser() (*user, error) {
	c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).SetNoDelay(true)
	return &user{c: c, r: protocol.NewReader(c, 0)}, nil
}

func (u *user) send(p protocol.Packet) error {
	_ = u.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := u.c.Write(encode(p))
	return err
}

func (u *user) next() (protocol.Packet, error) {
	_ = u.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return u.r.ReadPacket()
}

// enter connects a user to room under name.
func enter(room, name string) (*user, error) {
	u, err := dialUser()
	if err != nil {
		return nil, err
	}
	if err := u.send(access(room)); err != nil {
		return nil, err
	}
	if _, err := u.next(); err != nil {
		return nil, err
	}
	if err := u.send(&protocol.EnterRoom{Type: protocol.Request, RoomName: room, UserName: name, Profile: "p"}); err != nil {
		return nil, err
	}
	for {
		p, err := u.next()
		if err != nil {
			return nil, err
		}
		if e, ok := p.(*protocol.EnterRoom); ok && e.Type == protocol.Confirm {
			if e.Result != protocol.EnterOK {
				return nil, fmt.Errorf("enter %s: result %d", room, e.Result)
			}
			return u, nil
		}
	}
}

// prober measures a room's delivery latency: A sends a chat carrying its
// send time, B records when it arrives.
type prober struct {
	a, b    *user
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	lat     []time.Duration
	started time.Time
}

func startProbe() (*prober, error) {
	room := "Probe" + *tag
	a, err := enter(room, "a")
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	b, err := enter(room, "b")
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	p := &prober{a: a, b: b, done: make(chan struct{}), started: time.Now()}
	p.wg.Add(3)
	go func() { // A's replies: confirms, discarded
		defer p.wg.Done()
		_, _ = io.Copy(io.Discard, a.c)
	}()
	go func() {
		defer p.wg.Done()
		_ = b.c.SetReadDeadline(time.Time{})
		for {
			pk, err := b.r.ReadPacket()
			if err != nil {
				return
			}
			if c, ok := pk.(*protocol.Chat); ok && c.Type == protocol.Indication {
				ns, err := strconv.ParseInt(c.Text, 10, 64)
				if err == nil {
					d := time.Since(p.started) - time.Duration(ns)
					p.mu.Lock()
					p.lat = append(p.lat, d)
					p.mu.Unlock()
				}
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Second / time.Duration(*probeRate))
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			text := strconv.FormatInt(int64(time.Since(p.started)), 10)
			if err := a.send(&protocol.Chat{Type: protocol.Request, RoomName: room, UserName: "a", Text: text}); err != nil {
				return
			}
		}
	}()
	return p, nil
}

func (p *prober) stop() {
	close(p.done)
	time.Sleep(100 * time.Millisecond)
	p.a.c.Close()
	p.b.c.Close()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	slices.Sort(p.lat)
	q := func(f float64) int64 {
		if len(p.lat) == 0 {
			return -1
		}
		return p.lat[int(f*float64(len(p.lat)-1))].Microseconds()
	}
	fmt.Printf("probe_chats=%d probe_p50_us=%d probe_p99_us=%d probe_max_us=%d\n", len(p.lat), q(0.5), q(0.99), q(1))
}

// silent opens n connections that send first (or nothing), then waits for
// the server to close each; it prints how many closed and when.
func silent(first []byte) error {
	var (
		mu      sync.Mutex
		conns   []net.Conn
		closed  atomic.Int64
		longest atomic.Int64
		wg      sync.WaitGroup
	)
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	t0 := time.Now()
	// each connection is watched from its dial, so that its lifetime is
	// measured from when it was opened to when the server closed it
	watch := func(c net.Conn, at time.Time) {
		defer wg.Done()
		_ = c.SetReadDeadline(at.Add(*hold))
		_, err := io.Copy(io.Discard, c)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			closed.Add(1)
			d := int64(time.Since(at))
			for {
				l := longest.Load()
				if d <= l || longest.CompareAndSwap(l, d) {
					break
				}
			}
		}
	}
	opened := 0
	for i := 0; i < *n; i++ {
		c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
		if err != nil {
			fmt.Printf("dial_failed_at=%d err=%q\n", i, err)
			break
		}
		at := time.Now()
		if first != nil {
			if _, err := c.Write(first); err != nil {
				c.Close()
				continue
			}
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		opened++
		wg.Add(1)
		go watch(c, at)
	}
	fmt.Printf("opened=%d open_s=%.2f\n", opened, time.Since(t0).Seconds())
	wg.Wait()
	fmt.Printf("closed_by_server=%d of=%d longest_lifetime_s=%.2f\n", closed.Load(), opened, time.Duration(longest.Load()).Seconds())
	return nil
}

// malformed opens n connections one after another, each sending a packet
// of an unknown id, and waits for each to be closed.
func malformed() error {
	bad := []byte{0x03, 0xe7, 0, 0, 0, 1}
	closed := 0
	for i := 0; i < *n; i++ {
		c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
		if err != nil {
			return err
		}
		_, _ = c.Write(bad)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
		c.Close()
	}
	fmt.Printf("malformed_sent=%d closed_by_server=%d\n", *n, closed)
	return nil
}

// privflood sends n EnterPrivate requests from one connection (to itself
// or to a second user), reading the confirms meanwhile, then closes it and
// times the close as the second user sees it (its ExitRoom indication).
func privflood() error {
	room := "Flood" + *tag
	att, err := enter(room, "attacker")
	if err != nil {
		return err
	}
	other, err := enter(room, "other")
	if err != nil {
		return err
	}
	to := "other"
	if *self {
		to = "attacker"
	}
	var confirms atomic.Int64
	readDone := make(chan struct{})
	listed := make(chan struct{}, 1)
	go func() {
		defer close(readDone)
		_ = att.c.SetReadDeadline(time.Time{})
		for {
			p, err := att.r.ReadPacket()
			if err != nil {
				return
			}
			switch p := p.(type) {
			case *protocol.EnterPrivate:
				if p.Type == protocol.Confirm {
					confirms.Add(1)
				}
			case *protocol.RoomList:
				listed <- struct{}{}
			}
		}
	}()
	var indications atomic.Int64
	exited := make(chan time.Time, 1)
	go func() {
		_ = other.c.SetReadDeadline(time.Now().Add(30 * time.Minute))
		for {
			p, err := other.r.ReadPacket()
			if err != nil {
				return
			}
			switch p := p.(type) {
			case *protocol.EnterPrivate:
				indications.Add(1)
			case *protocol.ExitRoom:
				if p.UserName == "attacker" {
					exited <- time.Now()
					return
				}
			}
		}
	}()
	req := encode(&protocol.EnterPrivate{Type: protocol.Request, RoomName: room, FromName: "attacker", ToName: to})
	batch := make([]byte, 0, 1000*len(req))
	for range 1000 {
		batch = append(batch, req...)
	}
	t0 := time.Now()
	for sent := 0; sent < *n; sent += 1000 {
		// the server paces the requests, and a slow reader's receive
		// window opens in large steps: a write may wait minutes
		_ = att.c.SetWriteDeadline(time.Now().Add(30 * time.Minute))
		if _, err := att.c.Write(batch); err != nil {
			return fmt.Errorf("after %d requests: %w", sent, err)
		}
	}
	// a RoomList marks the end of the replies to the flood: once it is
	// answered, the server has handled every request
	_ = att.send(&protocol.RoomList{Type: protocol.Request})
	select {
	case <-listed:
	case <-time.After(30 * time.Minute):
		return errors.New("the flood was never answered")
	}
	flood := time.Since(t0)
	closeAt := time.Now()
	att.c.Close()
	<-readDone
	var closeTook time.Duration
	select {
	case at := <-exited:
		closeTook = at.Sub(closeAt)
	case <-time.After(2 * time.Minute):
		closeTook = -1
	}
	other.c.Close()
	fmt.Printf("requests=%d flood_s=%.2f confirms=%d indications=%d close_ms=%.3f\n",
		*n, flood.Seconds(), confirms.Load(), indications.Load(), float64(closeTook.Microseconds())/1000)
	return nil
}

// rooms opens n connections, each naming a new room of 100 three-byte
// characters (300 bytes), and records the size of each Access confirm and
// whether the room can be entered; the connections stay open until all
// are done.
func rooms() error {
	var conns []*user
	defer func() {
		for _, u := range conns {
			u.c.Close()
		}
	}()
	maxConfirm, total, entered, refused := 0, 0, 0, 0
	for i := 0; i < *n; i++ {
		u, err := dialUser()
		if err != nil {
			fmt.Printf("dial_failed_at=%d err=%q\n", i, err)
			break
		}
		conns = append(conns, u)
		id := *tag + "-" + strconv.Itoa(i)
		name := strings.Repeat("€", 100-len(id)) + id
		if err := u.send(access(name)); err != nil {
			return err
		}
		f, err := u.r.Next()
		if err != nil {
			return fmt.Errorf("access %d: %w", i, err)
		}
		total += len(f.Raw)
		maxConfirm = max(maxConfirm, len(f.Raw))
		if err := u.send(&protocol.EnterRoom{Type: protocol.Request, RoomName: name, UserName: "u", Profile: "p"}); err != nil {
			return err
		}
		p, err := u.next()
		if err != nil {
			return err
		}
		if e, ok := p.(*protocol.EnterRoom); ok && e.Result == protocol.EnterOK {
			entered++
		} else {
			refused++
		}
	}
	fmt.Printf("rooms_requested=%d entered=%d no_such_room=%d access_confirm_max_bytes=%d access_confirm_total_bytes=%d\n",
		len(conns), entered, refused, maxConfirm, total)
	time.Sleep(*linger)
	return nil
}

// slow runs a room of talkers chatting as fast as the server answers
// (turn-taking between two users) for -duration while -sleepers clients
// in the same room never read, each replaced after 2 s. It prints the
// room's messages per second.
func slow() error {
	room := "Slow" + *tag
	a, err := enter(room, "a")
	if err != nil {
		return err
	}
	b, err := enter(room, "b")
	if err != nil {
		return err
	}
	defer a.c.Close()
	defer b.c.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range *sleepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				u, err := dialUser()
				if err != nil {
					return
				}
				_ = u.c.(*net.TCPConn).SetReadBuffer(4096)
				_ = u.send(access(room))
				_ = u.send(&protocol.EnterRoom{Type: protocol.Request, RoomName: room, UserName: "s" + strconv.Itoa(i) + "_" + strconv.Itoa(k), Profile: "p"})
				// never read; after a while make way for another (the
				// server cuts each off well before: see its log)
				select {
				case <-stop:
					u.c.Close()
					return
				case <-time.After(2 * time.Second):
				}
				u.c.Close()
			}
		}()
	}
	// a and b take turns: a chats, waits for its confirm and b's
	// indication; then b does the same.
	text := strings.Repeat("x", 60)
	deadline := time.Now().Add(*duration)
	msgs := 0
	turn := func(from, to *user, name string) error {
		if err := from.send(&protocol.Chat{Type: protocol.Request, RoomName: room, UserName: name, Text: text}); err != nil {
			return err
		}
		for got := 0; got < 2; {
			u := from
			if got == 1 {
				u = to
			}
			p, err := u.next()
			if err != nil {
				return err
			}
			if _, ok := p.(*protocol.Chat); ok {
				got++
			}
		}
		return nil
	}
	t0 := time.Now()
	for time.Now().Before(deadline) {
		if err := turn(a, b, "a"); err != nil {
			return err
		}
		if err := turn(b, a, "b"); err != nil {
			return err
		}
		msgs += 2
	}
	el := time.Since(t0)
	close(stop)
	wg.Wait()
	fmt.Printf("room_chats=%d room_chats_per_s=%.0f\n", msgs, float64(msgs)/el.Seconds())
	return nil
}
