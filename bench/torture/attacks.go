package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volanogo/volanogo/internal/metrics"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// attacks is the suite, in the order it runs.
func attacks() []attack {
	return []attack{
		{name: "garbage", repeat: true, what: "random bytes behind an unknown id, before and after Access", run: attackGarbage},
		{name: "truncated", repeat: true, what: "half a packet, then the client closes", run: attackTruncated},
		{name: "unknown-id", repeat: true, what: "packet ids outside the table", run: attackUnknownID},
		{name: "unknown-type", repeat: true, what: "packet types outside 1..4 on valid packets", run: attackUnknownType},
		{name: "huge-counts", repeat: true, what: "counts of 2^31-1, 255 rooms in CreateRooms", run: attackHugeCounts},
		{name: "huge-names", repeat: true, what: "names, profiles and texts of up to 65535 bytes", run: attackHugeNames},
		{name: "rooms", what: "thousands of rooms with 100-character names, then a room list", run: attackRooms},
		{name: "conn-flood", what: "thousands of connections that pass Access and idle", run: attackConnFlood},
		{name: "slowloris-silent", what: "connections that never send a byte", run: attackSilent},
		{name: "slowloris-drip", what: "an Access sent one byte per --drip", run: attackDrip},
		{name: "never-reading", what: "room members that never read while a talker floods", run: attackNeverReading},
		{name: "private-flood", what: "one user opening private sessions by the thousand", run: attackPrivateFlood},
		{name: "metrics-cardinality", repeat: true, what: "distinct ids, versions, documents, filters and URLs", needM: true, run: attackCardinality},
		{name: "ws-oversized", repeat: true, what: "WebSocket frames of 1 MiB and of a claimed 2^62 bytes", needWS: true, run: attackWSOversized},
		{name: "ws-text", repeat: true, what: "a text frame instead of binary", needWS: true, run: attackWSText},
		{name: "ws-unmasked", repeat: true, what: "client frames without a mask", needWS: true, run: attackWSUnmasked},
		{name: "ws-ping-flood", what: "pings as fast as TCP takes them, pongs never read", needWS: true, run: attackWSPingFlood},
		{name: "ws-bad-origin", repeat: true, what: "upgrades from a foreign Origin", needWS: true, run: attackWSBadOrigin},
		{name: "ws-handshake-stall", what: "upgrade requests that never finish their headers", needWS: true, run: attackWSStall},
	}
}

// openMany opens n connections, at most 64 at a time, each with open.
func openMany(ctx context.Context, n int, open func(ctx context.Context, i int) (net.Conn, error)) (conns []net.Conn, failed int, firstErr error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			nc, err := open(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			conns = append(conns, nc)
		}()
	}
	wg.Wait()
	return conns, failed, firstErr
}

// countClosed waits up to wait for the server to close each connection
// and returns how many it closed.
func countClosed(ctx context.Context, conns []net.Conn, wait time.Duration) int {
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now())
		}
	})
	defer stop()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if closedByPeer(c, wait) {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// sendAll opens n connections and writes pkts(i) on each (optionally
// after a successful Access), then counts the server's closes.
func sendAll(ctx context.Context, e *env, n int, afterAccess bool, pkts func(i int) []byte) ([]net.Conn, int, error) {
	conns, failed, err := openMany(ctx, n, func(ctx context.Context, i int) (net.Conn, error) {
		c, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return nil, err
		}
		if afterAccess {
			if err := c.access("", e.cfg.Timeout); err != nil {
				c.close()
				return nil, err
			}
		}
		if err := c.send(pkts(i)); err != nil && !isClosedErr(err) {
			c.close()
			return nil, err
		}
		return c.nc, nil
	})
	return conns, failed, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func problemOf(failed int, err error) string {
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf("%d attacker connections could not be set up (%v)", failed, err)
}

func attackGarbage(ctx context.Context, e *env) outcome {
	var conns []net.Conn
	for _, after := range []bool{false, true} {
		cs, failed, err := sendAll(ctx, e, 50, after, func(int) []byte { return append([]byte{0xff, 0xff}, randomBytes(200)...) })
		conns = append(conns, cs...)
		if failed > 0 {
			closeAll(conns)
			return outcome{problem: problemOf(failed, err)}
		}
	}
	defer closeAll(conns)
	return outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true,
		reasons: []string{"protocol"}}
}

func attackTruncated(ctx context.Context, e *env) outcome {
	acc := accessPacket("")
	enter := enterPacket("TortureTruncated", "T")
	var conns []net.Conn
	for _, after := range []bool{false, true} {
		cs, failed, err := sendAll(ctx, e, 50, after, func(int) []byte {
			if after {
				return enter[:len(enter)/2]
			}
			return acc[:len(acc)/2]
		})
		conns = append(conns, cs...)
		if failed > 0 {
			closeAll(conns)
			return outcome{problem: problemOf(failed, err)}
		}
	}
	defer closeAll(conns)
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	return outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true}
}

func attackUnknownID(ctx context.Context, e *env) outcome {
	var conns []net.Conn
	for _, after := range []bool{false, true} {
		cs, failed, err := sendAll(ctx, e, 50, after, func(i int) []byte {
			b := protocol.AppendHeader(nil, protocol.ID(1000+i*1000), protocol.Request)
			return append(b, randomBytes(16)...)
		})
		conns = append(conns, cs...)
		if failed > 0 {
			closeAll(conns)
			return outcome{problem: problemOf(failed, err)}
		}
	}
	defer closeAll(conns)
	return outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true,
		reasons: []string{"protocol"}}
}

// attackUnknownType sends well-formed packets with types 0, 5, -1 and
// 2^31-1: the wire allows them and the request layout applies. The server
// may answer or close; it must not fall over.
func attackUnknownType(ctx context.Context, e *env) outcome {
	types := []protocol.Type{0, 5, -1, 1<<31 - 1}
	answered, closed := 0, 0
	var problems []string
	for _, t := range types {
		c, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return outcome{problem: err.Error()}
		}
		a := &protocol.Access{Type: t, DefaultRoom: "TortureTypes", AppletVersion: version,
			DocumentBase: "http://torture.invalid/", CodeBase: "http://torture.invalid/"}
		pkts := [][]byte{mustPacket(a),
			mustPacket(&protocol.EnterRoom{Type: t, Profile: "p", RoomName: "TortureTypes", UserName: "T"}),
			mustPacket(&protocol.Chat{Type: t, RoomName: "TortureTypes", UserName: "T", Text: "typed"}),
			mustPacket(&protocol.RoomList{Type: t}),
			mustPacket(&protocol.RoomList{Type: protocol.Request})}
		var b []byte
		for _, p := range pkts {
			b = append(b, p...)
		}
		if err := c.send(b); err != nil && !isClosedErr(err) {
			problems = append(problems, err.Error())
		}
		if _, err := c.expect(protocol.IDRoomList, protocol.Confirm, e.cfg.Timeout); err == nil {
			answered++
		} else if isClosedErr(err) {
			closed++
		} else {
			problems = append(problems, fmt.Sprintf("type %d: neither answered nor closed: %v", t, err))
		}
		c.close()
	}
	return outcome{attackers: len(types), closed: closed, figures: fmt.Sprintf("answered %d, closed %d", answered, closed),
		problem: strings.Join(problems, "; ")}
}

// attackHugeCounts: element counts of 2^31-1 with a few bytes behind them,
// in a RoomList, an EnterRoom confirm's user list and an Access confirm's
// room list; and a CreateRooms of 255 names of 127 characters.
func attackHugeCounts(ctx context.Context, e *env) outcome {
	huge := func(id protocol.ID, t protocol.Type, prefix func([]byte) []byte) []byte {
		b := protocol.AppendHeader(nil, id, t)
		b = prefix(b)
		b = protocol.AppendInt32(b, 1<<31-1)
		return append(b, randomBytes(64)...)
	}
	str := func(b []byte, s string) []byte { b, _ = protocol.AppendString(b, s); return b }
	roomList := huge(protocol.IDRoomList, protocol.Request, func(b []byte) []byte { return str(b, "") })
	enterConfirm := huge(protocol.IDEnterRoom, protocol.Confirm, func(b []byte) []byte {
		b = str(str(str(b, "p"), "TortureCounts"), "T")
		return protocol.AppendInt32(protocol.AppendInt32(protocol.AppendInt32(b, 1), 1), 1<<31-1)
	})
	accessConfirm := huge(protocol.IDAccess, protocol.Confirm, func(b []byte) []byte { return protocol.AppendInt32(b, 1) })
	names := make([]string, 255)
	for i := range names {
		names[i] = fmt.Sprintf("%03d%s", i, strings.Repeat("r", protocol.MaxCreateRoomName-3))
	}
	create := mustPacket(&protocol.CreateRooms{Type: protocol.Request, Rooms: names})
	pkts := [][]byte{roomList, enterConfirm, accessConfirm, create}
	var conns []net.Conn
	for _, after := range []bool{false, true} {
		cs, failed, err := sendAll(ctx, e, len(pkts)*5, after, func(i int) []byte { return pkts[i%len(pkts)] })
		conns = append(conns, cs...)
		if failed > 0 {
			closeAll(conns)
			return outcome{problem: problemOf(failed, err)}
		}
	}
	defer closeAll(conns)
	return outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true,
		reasons: []string{"too_large", "protocol", "not_allowed", "first_packet"}}
}

// attackHugeNames: an EnterRoom with a room name, a user name, a profile
// of 60,000 bytes or 65,535, and a chat text of 60,000 bytes after
// entering: too long for the name and text limits, and (volanogo serve's
// default --max-packet is 8 KiB) too large, refused at the string's
// length.
func attackHugeNames(ctx context.Context, e *env) outcome {
	long := strings.Repeat("n", 60000)
	longest := strings.Repeat("n", 65535)
	type step struct {
		enter bool // pass EnterRoom first
		pkt   func(room string) []byte
	}
	const room = "TortureNames"
	steps := []step{
		{false, func(string) []byte { return enterPacket(long, "T") }},
		{false, func(string) []byte { return enterPacket(room, long) }},
		{false, func(string) []byte {
			return mustPacket(&protocol.EnterRoom{Type: protocol.Request, Profile: long, RoomName: room, UserName: "T"})
		}},
		{false, func(string) []byte { return enterPacket(room, longest) }},
		{true, func(user string) []byte { return chatPacket(room, user, long) }},
		{true, func(user string) []byte { return chatPacket(room, user, longest) }},
	}
	conns, failed, err := openMany(ctx, len(steps)*3, func(ctx context.Context, i int) (net.Conn, error) {
		st := steps[i%len(steps)]
		c, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return nil, err
		}
		user := fmt.Sprintf("T%d", i)
		if st.enter {
			if err := c.join(room, user, e.cfg.Timeout); err != nil {
				c.close()
				return nil, err
			}
		} else if err := c.access(room, e.cfg.Timeout); err != nil {
			c.close()
			return nil, err
		}
		if err := c.send(st.pkt(user)); err != nil && !isClosedErr(err) {
			c.close()
			return nil, err
		}
		return c.nc, nil
	})
	defer closeAll(conns)
	return outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true,
		reasons: []string{"too_long", "too_large"}, problem: problemOf(failed, err)}
}

// attackRooms: each of cfg.Rooms connections makes a room of its own
// (Access naming it, then EnterRoom), with names of 100 characters; one
// more asks for the room list; all stay for the attack's duration.
func attackRooms(ctx context.Context, e *env) outcome {
	var refused atomic.Int64
	var firstRefusal atomic.Value
	conns, failed, err := openMany(ctx, e.cfg.Rooms, func(ctx context.Context, i int) (net.Conn, error) {
		c, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("TortureRoom%06d", i)
		name += strings.Repeat("x", 100-len(name))
		if err := c.join(name, "T", e.cfg.Timeout); err != nil {
			if strings.Contains(err.Error(), "refused") || isClosedErr(err) {
				refused.Add(1)
				firstRefusal.CompareAndSwap(nil, err.Error())
				return c.nc, nil
			}
			c.close()
			return nil, err
		}
		return c.nc, nil
	})
	defer closeAll(conns)
	listed, size := -1, 0
	if c, err := dialClient(ctx, e.cfg.Target); err == nil {
		if c.access("", e.cfg.Timeout) == nil && c.send(mustPacket(&protocol.RoomList{Type: protocol.Request})) == nil {
			if f, err := c.expect(protocol.IDRoomList, protocol.Confirm, e.cfg.Timeout); err == nil {
				size = len(f.Raw)
				if p, err := f.Decode(); err == nil {
					listed = len(p.(*protocol.RoomList).Rooms)
				}
			}
		}
		c.close()
	}
	peak := -1.0
	if m, err := e.metrics(ctx); err == nil && m != nil {
		peak, _ = m.Get("volanogo_rooms")
	}
	sleepCtx(ctx, e.cfg.Duration)
	fig := fmt.Sprintf("%d connections made rooms (%d refused), rooms %.0f, list %d names in %d bytes",
		len(conns)-int(refused.Load()), refused.Load(), peak, listed, size)
	if r, ok := firstRefusal.Load().(string); ok {
		fig += " (refusal: " + r + ")"
	}
	return outcome{attackers: len(conns), figures: fig, problem: problemOf(failed, err)}
}

// attackConnFlood: cfg.Conns connections that pass Access and idle for
// the attack's duration.
func attackConnFlood(ctx context.Context, e *env) outcome {
	if e.cfg.Conns > e.cfg.PerProc && e.cfg.Self != "" {
		h, r, err := startHelpers(ctx, e, e.cfg.Conns, true)
		if err != nil {
			return outcome{problem: err.Error()}
		}
		sleepCtx(ctx, e.cfg.Duration)
		h.stop()
		return outcome{attackers: r.Opened, figures: fmt.Sprintf("%d connections held by %d processes", r.Opened, len(h.cmds)),
			problem: problemOf(r.Failed, errors.New(r.Err))}
	}
	conns, failed, err := openMany(ctx, e.cfg.Conns, func(ctx context.Context, i int) (net.Conn, error) {
		c, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return nil, err
		}
		if err := c.access("", e.cfg.Timeout); err != nil {
			c.close()
			return nil, err
		}
		return c.nc, nil
	})
	defer closeAll(conns)
	sleepCtx(ctx, e.cfg.Duration)
	return outcome{attackers: len(conns), figures: fmt.Sprintf("%d connections held", len(conns)),
		problem: problemOf(failed, err)}
}

// attackSilent: cfg.Conns connections that never send; the server should
// close them (a first-packet deadline).
func attackSilent(ctx context.Context, e *env) outcome {
	if e.cfg.Conns > e.cfg.PerProc && e.cfg.Self != "" {
		start := time.Now()
		h, r, err := startHelpers(ctx, e, e.cfg.Conns, false)
		if err != nil {
			return outcome{problem: err.Error()}
		}
		closed := h.closed()
		h.stop()
		return outcome{attackers: r.Opened, closed: closed, wantClosed: true, problem: problemOf(r.Failed, errors.New(r.Err)),
			reasons: []string{"access_timeout"}, figures: fmt.Sprintf("%d closed in %.1fs, %d processes", closed, time.Since(start).Seconds(), len(h.cmds))}
	}
	conns, failed, err := openMany(ctx, e.cfg.Conns, func(ctx context.Context, i int) (net.Conn, error) {
		return dialTCP(ctx, e.cfg.Target)
	})
	defer closeAll(conns)
	start := time.Now()
	closed := countClosed(ctx, conns, e.cfg.Wait)
	return outcome{attackers: len(conns), closed: closed, wantClosed: true, problem: problemOf(failed, err),
		reasons: []string{"access_timeout"}, figures: fmt.Sprintf("%d closed in %.1fs", closed, time.Since(start).Seconds())}
}

// attackDrip: connections that send a valid Access one byte per cfg.Drip;
// the server should close them before the packet is whole.
func attackDrip(ctx context.Context, e *env) outcome {
	n := min(e.cfg.Conns, 200)
	acc := accessPacket("")
	conns, failed, err := openMany(ctx, n, func(ctx context.Context, i int) (net.Conn, error) {
		return dialTCP(ctx, e.cfg.Target)
	})
	defer closeAll(conns)
	dctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var sent atomic.Int64
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range len(acc) - 1 { // never the last byte
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(acc[i : i+1]); err != nil {
					return
				}
				sent.Add(1)
				select {
				case <-dctx.Done():
					return
				case <-time.After(e.cfg.Drip):
				}
			}
		}()
	}
	start := time.Now()
	closed := countClosed(ctx, conns, e.cfg.Wait)
	stop()
	wg.Wait()
	return outcome{attackers: len(conns), closed: closed, wantClosed: true, problem: problemOf(failed, err),
		reasons: []string{"access_timeout"},
		figures: fmt.Sprintf("%d closed in %.1fs after %d bytes", closed, time.Since(start).Seconds(), sent.Load())}
}

// attackNeverReading: rooms of members that never read, shrunk receive
// buffers, and in each a talker sending chats of the longest text as fast
// as the server confirms them; the server should cut the readers off as
// slow consumers without stalling anyone else.
func attackNeverReading(ctx context.Context, e *env) outcome {
	const rooms, readers = 2, 20
	var all []net.Conn
	defer func() { closeAll(all) }()
	var talkers []*client
	for r := range rooms {
		room := fmt.Sprintf("TortureDeaf%d", r)
		t, err := dialClient(ctx, e.cfg.Target)
		if err != nil {
			return outcome{problem: err.Error()}
		}
		all = append(all, t.nc)
		if err := t.join(room, "Talker", e.cfg.Timeout); err != nil {
			return outcome{problem: "talker: " + err.Error()}
		}
		talkers = append(talkers, t)
		for i := range readers {
			c, err := dialTCP(ctx, e.cfg.Target)
			if err != nil {
				return outcome{problem: err.Error()}
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			all = append(all, c)
			cl := &client{nc: c, rd: protocol.NewReader(c, 1<<20)}
			if err := cl.join(room, fmt.Sprintf("Deaf%d", i), e.cfg.Timeout); err != nil {
				return outcome{problem: "reader: " + err.Error()}
			}
		}
	}
	deaf := all[:0:0]
	for _, c := range all {
		if !isTalker(c, talkers) {
			deaf = append(deaf, c)
		}
	}
	// Each talker presses until the server has cut off every reader of
	// its room (the talker sees their ExitRoom indications), for at most
	// the duration and the wait.
	text := strings.Repeat("z", 200)
	tctx, stop := context.WithTimeout(ctx, e.cfg.Duration+e.cfg.Wait)
	defer stop()
	var wg sync.WaitGroup
	var chats atomic.Int64
	for i, t := range talkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkt := chatPacket(fmt.Sprintf("TortureDeaf%d", i), "Talker", text)
			exits := 0
			for tctx.Err() == nil && exits < readers {
				if t.send(pkt) != nil {
					return
				}
				_ = t.nc.SetReadDeadline(time.Now().Add(e.cfg.Timeout))
				for {
					f, err := t.rd.Next()
					if err != nil {
						return
					}
					if f.ID == protocol.IDExitRoom && f.Type == protocol.Indication {
						exits++
					}
					if f.ID == protocol.IDChat && f.Type == protocol.Confirm {
						break
					}
				}
				chats.Add(1)
			}
		}()
	}
	wg.Wait()
	closed := countClosed(ctx, deaf, e.cfg.Wait)
	return outcome{attackers: len(deaf), closed: closed, wantClosed: true, reasons: []string{"slow_consumer", "write_error"},
		figures: fmt.Sprintf("%d chats of 200 characters to %d rooms of %d non-readers", chats.Load(), rooms, readers)}
}

func isTalker(c net.Conn, talkers []*client) bool {
	for _, t := range talkers {
		if t.nc == c {
			return true
		}
	}
	return false
}

// attackPrivateFlood: a user asks for cfg.Privates private sessions with
// another, as fast as the server answers; counts the sessions opened.
func attackPrivateFlood(ctx context.Context, e *env) outcome {
	const room = "TorturePrivate"
	a, err := dialClient(ctx, e.cfg.Target)
	if err != nil {
		return outcome{problem: err.Error()}
	}
	defer a.close()
	b, err := dialClient(ctx, e.cfg.Target)
	if err != nil {
		return outcome{problem: err.Error()}
	}
	defer b.close()
	if err := a.join(room, "A", e.cfg.Timeout); err != nil {
		return outcome{problem: err.Error()}
	}
	if err := b.join(room, "B", e.cfg.Timeout); err != nil {
		return outcome{problem: err.Error()}
	}
	// B reads and discards its indications.
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		buf := make([]byte, 64<<10)
		for bctx.Err() == nil {
			_ = b.nc.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := b.nc.Read(buf); err != nil && !isTimeout(err) {
				return
			}
		}
	}()
	pkt := mustPacket(&protocol.EnterPrivate{Type: protocol.Request, RoomName: room, FromName: "A", ToName: "B"})
	var confirms atomic.Int64
	done := make(chan error, 1)
	go func() {
		_ = a.nc.SetReadDeadline(time.Now().Add(e.cfg.Duration + e.cfg.Timeout))
		for {
			f, err := a.rd.Next()
			if err != nil {
				done <- err
				return
			}
			if f.ID == protocol.IDEnterPrivate && f.Type == protocol.Confirm {
				confirms.Add(1)
			}
		}
	}()
	deadline := time.Now().Add(e.cfg.Duration)
	sent := 0
	var batch []byte
	for sent < e.cfg.Privates && time.Now().Before(deadline) {
		batch = batch[:0]
		for range 100 {
			batch = append(batch, pkt...)
		}
		if a.send(batch) != nil {
			break
		}
		sent += 100
	}
	// Let the answers arrive: wait while they keep coming.
	var readErr error
	finished := false
	for last := int64(-1); !finished && confirms.Load() != last && confirms.Load() < int64(sent); {
		last = confirms.Load()
		select {
		case readErr = <-done:
			finished = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	if !finished {
		_ = a.nc.SetReadDeadline(time.Now())
		readErr = <-done
	}
	opened := confirms.Load()
	res := outcome{attackers: 1, figures: fmt.Sprintf("%d sessions asked, %d opened", sent, opened)}
	if finished && isClosedErr(readErr) {
		res.closed = 1
		res.figures += ", the asker was closed"
	}
	if m, err := e.metrics(ctx); err == nil && m != nil {
		v, _ := m.Get("process_resident_memory_bytes")
		res.figures += fmt.Sprintf(", server RSS %s MB", mb(int64(v)))
	}
	return res
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// attackCardinality tries to grow the number of metric series: unknown
// packet ids, applet versions, document bases, room-list filters, and
// metrics URLs with distinct paths and queries.
func attackCardinality(ctx context.Context, e *env) outcome {
	m0, err := e.metrics(ctx)
	if err != nil {
		return outcome{problem: err.Error()}
	}
	n := min(200, 8*e.cfg.Conns)
	pkts := func(i int) []byte {
		switch i % 4 {
		case 0:
			return protocol.AppendHeader(nil, protocol.ID(300+i), protocol.Request)
		case 1:
			return mustPacket(&protocol.Access{Type: protocol.Request, AppletVersion: fmt.Sprintf("9.%d", i)})
		case 2:
			return mustPacket(&protocol.Access{Type: protocol.Request, AppletVersion: version, DocumentBase: fmt.Sprintf("http://h%d.invalid/", i)})
		default:
			return append(accessPacket(""), mustPacket(&protocol.RoomList{Type: protocol.Request, Filter: fmt.Sprintf("f%d", i)})...)
		}
	}
	conns, failed, serr := sendAll(ctx, e, n, false, pkts)
	closeAll(conns)
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range n / 4 {
		for _, u := range []string{fmt.Sprintf("%s?x%d=%d", e.cfg.Metrics, i, i), strings.TrimSuffix(e.cfg.Metrics, "/metrics") + fmt.Sprintf("/p%d", i)} {
			if resp, err := client.Get(u); err == nil {
				_ = resp.Body.Close()
			}
		}
	}
	m1, err := e.metrics(ctx)
	if err != nil {
		return outcome{problem: err.Error()}
	}
	grown := seriesOf(m1) - seriesOf(m0)
	res := outcome{attackers: len(conns), figures: fmt.Sprintf("volanogo series %d -> %d", seriesOf(m0), seriesOf(m1)),
		problem: problemOf(failed, serr)}
	if grown > 0 {
		res.problem = strings.TrimPrefix(res.problem+fmt.Sprintf("; %d new volanogo series", grown), "; ")
	}
	return res
}

// seriesOf counts the server's own series (the Go runtime's are fixed).
func seriesOf(m metrics.Samples) int {
	n := 0
	for k, ss := range m {
		if strings.HasPrefix(k, "volanogo_") {
			n += len(ss)
		}
	}
	return n
}

// wsAttack opens n WebSocket connections, writes frames(i) on each and
// counts the server's closes.
func wsAttack(ctx context.Context, e *env, n int, frames func(i int) []byte, reasons []string) outcome {
	var ws []*wsConn
	var problems []string
	for i := range n {
		w, err := wsDial(ctx, e.cfg.WS, "")
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if w.status != http.StatusSwitchingProtocols {
			w.close()
			problems = append(problems, fmt.Sprintf("upgrade refused: %d", w.status))
			continue
		}
		ws = append(ws, w)
		if err := w.write(frames(i)); err != nil && !isClosedErr(err) {
			problems = append(problems, err.Error())
		}
	}
	conns := make([]net.Conn, len(ws))
	for i, w := range ws {
		conns[i] = w.nc
	}
	defer closeAll(conns)
	res := outcome{attackers: len(conns), closed: countClosed(ctx, conns, e.cfg.Wait), wantClosed: true, reasons: reasons}
	if len(problems) > 0 {
		res.problem = fmt.Sprintf("%d setup problems, first: %s", len(problems), problems[0])
	}
	return res
}

func attackWSOversized(ctx context.Context, e *env) outcome {
	big := randomBytes(1 << 20)
	return wsAttack(ctx, e, 10, func(i int) []byte {
		if i%2 == 0 {
			return wsFrame(opBinary, big, true, 0)
		}
		return wsFrame(opBinary, randomBytes(64), true, 1<<62)
	}, []string{"too_large"})
}

func attackWSText(ctx context.Context, e *env) outcome {
	return wsAttack(ctx, e, 10, func(int) []byte { return wsFrame(opText, accessPacket(""), true, 0) }, []string{"protocol"})
}

func attackWSUnmasked(ctx context.Context, e *env) outcome {
	return wsAttack(ctx, e, 10, func(int) []byte { return wsFrame(opBinary, accessPacket(""), false, 0) },
		[]string{"read_error", "protocol"})
}

func attackWSPingFlood(ctx context.Context, e *env) outcome {
	var ws []*wsConn
	for range 5 {
		w, err := wsDial(ctx, e.cfg.WS, "")
		if err != nil {
			return outcome{problem: err.Error()}
		}
		ws = append(ws, w)
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	var sent atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(e.cfg.Duration)
	ping := wsFrame(opPing, randomBytes(125), true, 0)
	var batch []byte
	for range 64 {
		batch = append(batch, ping...)
	}
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				_ = w.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := w.nc.Write(batch); err != nil {
					if isTimeout(err) {
						continue
					}
					return
				}
				sent.Add(64)
			}
		}()
	}
	wg.Wait()
	// Still a chat connection afterwards? Send Access and look for its
	// confirm behind the pongs.
	answered, closed := 0, 0
	for _, w := range ws {
		if err := w.write(wsFrame(opBinary, accessPacket(""), true, 0)); err != nil {
			if isClosedErr(err) {
				closed++
			}
			continue
		}
		p, err := w.readPacket(e.cfg.Timeout + e.cfg.Duration)
		switch {
		case err == nil && len(p) > 2 && protocol.ID(p[0])<<8|protocol.ID(p[1]) == protocol.IDAccess:
			answered++
		case err != nil && isClosedErr(err):
			closed++
		}
	}
	return outcome{attackers: len(ws), closed: closed,
		figures: fmt.Sprintf("%d pings sent unread; then %d of %d answered Access, %d closed", sent.Load(), answered, len(ws), closed)}
}

func attackWSBadOrigin(ctx context.Context, e *env) outcome {
	upgraded, refused := 0, 0
	for range 20 {
		w, err := wsDial(ctx, e.cfg.WS, "http://evil.invalid")
		if err != nil {
			continue
		}
		if w.status == http.StatusSwitchingProtocols {
			upgraded++
		} else {
			refused++
		}
		w.close()
	}
	res := outcome{figures: fmt.Sprintf("%d refused, %d upgraded", refused, upgraded)}
	if upgraded > 0 {
		res.problem = fmt.Sprintf("%d upgrades from a foreign Origin were accepted", upgraded)
	}
	return res
}

func attackWSStall(ctx context.Context, e *env) outcome {
	n := max(10, min(e.cfg.Conns/10, 500))
	host := strings.TrimPrefix(e.cfg.WS, "ws://")
	host, _, _ = strings.Cut(host, "/")
	conns, failed, err := openMany(ctx, n, func(ctx context.Context, i int) (net.Conn, error) {
		c, err := dialTCP(ctx, host)
		if err != nil {
			return nil, err
		}
		if i%2 == 0 {
			_, _ = c.Write([]byte("GET /chat HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\n"))
		}
		return c, nil
	})
	defer closeAll(conns)
	start := time.Now()
	closed := countClosed(ctx, conns, e.cfg.Wait)
	return outcome{attackers: len(conns), closed: closed, wantClosed: true, problem: problemOf(failed, err),
		reasons: []string{"handshake_timeout"}, figures: fmt.Sprintf("%d closed in %.1fs", closed, time.Since(start).Seconds())}
}
