package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// squat keeps -n connections open that never send a byte, each dialled
// again as soon as the server closes it, for -duration: the descriptors
// of a server at its open-files limit held the way a silent attacker
// holds them (mode refused holds them with refused packets instead).
func squat() error { return occupy(nil) }

// occupy keeps -n connections open for -duration, each sending first (if
// any) and then waiting for the server's close, dialled again at once.
// It prints the connections, those the server closed, and its own CPU
// time.
func occupy(first []byte) error {
	var (
		dials, closed atomic.Int64
		wg            sync.WaitGroup
	)
	cpu0 := cpuSelf()
	deadline := time.Now().Add(*duration)
	for range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				dials.Add(1)
				c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond) // refused: do not spin
					continue
				}
				_ = c.SetDeadline(deadline)
				if err := writeFirst(c, first); err == nil {
					if _, err := io.Copy(io.Discard, c); !errors.Is(err, os.ErrDeadlineExceeded) {
						closed.Add(1)
					}
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	cpu := cpuSelf() - cpu0
	fmt.Printf("connections=%d closed_by_server=%d attacker_cpu_s=%.3f\n", dials.Load(), closed.Load(), cpu.Seconds())
	return nil
}

// writeFirst writes b to c, if there is any.
func writeFirst(c net.Conn, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := c.Write(b)
	return err
}

// admit measures how long a user who means to chat takes to get in: -n
// users, one every 100 ms, each connecting and sending its Access until
// it is answered (a connection closed before the answer is tried again
// 100 ms later), within -hold. Prints the times to the answer and how
// many never got one.
func admit() error {
	req := encode(access("Admit" + *tag))
	var (
		mu     sync.Mutex
		took   []time.Duration
		tries  atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			giveUp := start.Add(*hold)
			for time.Now().Before(giveUp) {
				tries.Add(1)
				if answered(req, giveUp) {
					mu.Lock()
					took = append(took, time.Since(start))
					mu.Unlock()
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			failed.Add(1)
		}()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	slices.Sort(took)
	pct := func(p float64) float64 {
		if len(took) == 0 {
			return 0
		}
		return took[int(p*float64(len(took)-1))].Seconds() * 1000
	}
	fmt.Printf("admitted=%d failed=%d tries=%d admit_ms_p50=%.1f admit_ms_max=%.1f\n",
		len(took), failed.Load(), tries.Load(), pct(0.5), pct(1))
	return nil
}

// answered connects, sends req and tells whether an Access confirm came
// back before the server closed the connection or giveUp passed.
func answered(req []byte, giveUp time.Time) bool {
	c, err := net.DialTimeout("tcp", *addr, time.Until(giveUp))
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(giveUp)
	if _, err := c.Write(req); err != nil {
		return false
	}
	p, err := protocol.NewReader(c, 0).ReadPacket()
	if err != nil {
		return false
	}
	a, ok := p.(*protocol.Access)
	return ok && a.Type == protocol.Confirm && a.Result == protocol.AccessOK
}
