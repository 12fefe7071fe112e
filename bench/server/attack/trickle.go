package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// cpuSelf is this process's CPU time so far (user and system).
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tricklePacket is 64 KiB of one-byte strings: before Access an Access
// confirm of 21,840 room names (65,535 bytes), after it a RoomList
// request of as many (65,532 bytes).
func tricklePacket(after bool) []byte {
	rooms := make([]string, 21840)
	for i := range rooms {
		rooms[i] = string(rune('a' + i%26))
	}
	if after {
		return encode(&protocol.RoomList{Type: protocol.Request, Rooms: rooms})
	}
	return encode(&protocol.Access{Type: protocol.Confirm, Rooms: rooms})
}

// trickle runs -n attackers for -duration, each sending the packet over
// and over (its first 14 bytes in one write, then 1 to 3 bytes per
// write, or all of it in one write with -whole), reconnecting whenever
// the server closes it. It prints the packets sent whole, the
// reconnections and its own CPU time.
func trickle() error {
	pkt := tricklePacket(*afterAcc)
	if *sink != "" {
		if *afterAcc {
			return errors.New("-sink takes the packets before Access only")
		}
		if *sink != "whole" && *sink != "reader" && *sink != "refuse" {
			return fmt.Errorf("-sink %q: whole, reader or refuse", *sink)
		}
		ln, err := startSink(len(pkt), *sink)
		if err != nil {
			return err
		}
		defer ln.Close()
		*addr = ln.Addr().String()
	}
	var (
		packets, dials, bytes atomic.Int64
		wg                    sync.WaitGroup
	)
	cpu0 := cpuSelf()
	deadline := time.Now().Add(*duration)
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(deadline) {
				dials.Add(1)
				if err := trickleConn(pkt, rng, deadline, &packets, &bytes); err != nil && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond) // refused or reset: do not spin
				}
			}
		}()
	}
	wg.Wait()
	cpu := cpuSelf() - cpu0
	fmt.Printf("trickle_packets=%d connections=%d bytes=%d attacker_cpu_s=%.3f packet_bytes=%d whole=%t after_access=%t\n",
		packets.Load(), dials.Load(), bytes.Load(), cpu.Seconds(), len(pkt), *whole, *afterAcc)
	return nil
}

// trickleConn is one connection of trickle, until the server closes it
// or the deadline.
func trickleConn(pkt []byte, rng *rand.Rand, deadline time.Time, packets, bytes *atomic.Int64) error {
	c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetNoDelay(true)
	_ = c.SetWriteDeadline(deadline)
	if *afterAcc {
		u := &user{c: c, r: protocol.NewReader(c, 0)}
		if err := u.send(access("Trickle" + *tag)); err != nil {
			return err
		}
		if _, err := u.next(); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Time{})
		go func() { _, _ = io.Copy(io.Discard, c) }() // the RoomList confirms
	}
	for time.Now().Before(deadline) {
		if *whole {
			if _, err := c.Write(pkt); err != nil {
				return err
			}
		} else {
			if _, err := c.Write(pkt[:14]); err != nil {
				return err
			}
			start := time.Now()
			for off := 14; off < len(pkt); {
				k := min(1+rng.IntN(3), len(pkt)-off)
				if _, err := c.Write(pkt[off : off+k]); err != nil {
					return err
				}
				off += k
				if *spread > 0 {
					// On schedule: the bytes so far at their share of
					// -spread (sleeping 1 ms at least, so a few writes
					// go out together, each still 1 to 3 bytes).
					due := start.Add(time.Duration(float64(*spread) * float64(off) / float64(len(pkt))))
					if wait := time.Until(due); wait >= time.Millisecond {
						if due.After(deadline) {
							return nil
						}
						time.Sleep(wait)
					}
				}
			}
		}
		packets.Add(1)
		bytes.Add(int64(len(pkt)))
		if !*afterAcc {
			// before Access the server closes after the packet: wait for it
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := io.Copy(io.Discard, c)
			if err == nil {
				return nil
			}
			return err
		}
	}
	return nil
}

// stray runs -n connections for -duration that pass Access, enter no
// room and send chats to -stray-room in batches of 1,000, reconnecting
// whenever the server closes one. It prints the chats written, the
// connections and its own CPU time.
func stray() error {
	chat := encode(&protocol.Chat{Type: protocol.Request, RoomName: *strayRoom, UserName: "stray", Text: "not a member"})
	batch := make([]byte, 0, 1000*len(chat))
	for range 1000 {
		batch = append(batch, chat...)
	}
	var (
		chats, dials, closed atomic.Int64
		wg                   sync.WaitGroup
	)
	cpu0 := cpuSelf()
	deadline := time.Now().Add(*duration)
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				dials.Add(1)
				err := strayConn(i, batch, len(chat), deadline, &chats)
				if err != nil && time.Now().Before(deadline) {
					closed.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	cpu := cpuSelf() - cpu0
	fmt.Printf("stray_chats=%d stray_bytes=%d connections=%d closed_by_server=%d attacker_cpu_s=%.3f\n",
		chats.Load(), chats.Load()*int64(len(chat)), dials.Load(), closed.Load(), cpu.Seconds())
	return nil
}

func strayConn(i int, batch []byte, size int, deadline time.Time, chats *atomic.Int64) error {
	u, err := dialUser()
	if err != nil {
		return err
	}
	defer u.c.Close()
	if err := u.send(access("Stray" + *tag + strconv.Itoa(i))); err != nil {
		return err
	}
	if _, err := u.next(); err != nil {
		return err
	}
	_ = u.c.SetReadDeadline(time.Time{})
	go func() { _, _ = io.Copy(io.Discard, u.c) }()
	_ = u.c.SetWriteDeadline(deadline)
	for time.Now().Before(deadline) {
		k, err := u.c.Write(batch)
		chats.Add(int64(k / size))
		if err != nil {
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
				return err
			}
			if time.Now().Before(deadline) {
				return err
			}
			return nil
		}
	}
	return nil
}

// startSink listens on loopback and, for each connection, reads one
// packet of size bytes, then closes it: whole, waiting for all of it at
// once (SO_RCVLOWAT at its size: the least a server could spend on the
// attack); reader, with a protocol.Reader over SO_RCVLOWAT, as volanogo
// serve's goroutine engine reads it when --max-packet lets it through
// (what the server spends, in this process). Or refuse: it reads the
// packet's first 14 bytes (its header and count, on which serve's default
// --max-packet refuses it), holds the connection unread for -sink-hold
// (serve's --violation-hold), and closes it: the least a server refusing
// it could spend.
func startSink(size int, how string) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				raw, err := c.(*net.TCPConn).SyscallConn()
				if err != nil {
					return
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if how == "refuse" {
					var head [14]byte
					_, _ = io.ReadFull(c, head[:])
					time.Sleep(*sinkHold)
					return
				}
				if how == "reader" {
					_, _ = protocol.NewReader(&lowWater{TCPConn: c.(*net.TCPConn), raw: raw}, 0).Next()
					return
				}
				_ = raw.Control(func(fd uintptr) {
					_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, size)
				})
				buf := make([]byte, size)
				_, _ = io.ReadFull(c, buf)
			}()
		}
	}()
	return ln, nil
}

// lowWater is a TCP connection with protocol.LowWater.
type lowWater struct {
	*net.TCPConn
	raw syscall.RawConn
}

func (c *lowWater) SetReadLowWater(n int) error {
	var serr error
	if err := c.raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

// refused keeps -n connections for -duration that each send only the
// first 14 bytes of the trickle packet (a count that --max-packet
// refuses) and wait for the server to close them, reconnecting at once:
// as many held connections at a time as the attacker has, each costing it
// a dial and a write a hold (occupy).
func refused() error { return occupy(tricklePacket(false)[:14]) }
