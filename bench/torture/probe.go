package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// probe is the real users: one room of a few users taking turns, each
// chat a round (sent, confirmed to its sender, indicated to every other
// user), at most rate rounds a second. It runs through the whole suite in
// a room of its own; the attacks never touch it.
type probe struct {
	addr    string
	room    string
	users   int
	rate    float64
	timeout time.Duration

	mu        sync.Mutex
	rounds    int64
	latencies []time.Duration // since the last take
	err       error           // the probe was cut off
	cutAt     time.Time
}

// probeWindow is what the probe saw over a window.
type probeWindow struct {
	Rounds  int64
	Seconds float64
	P99     time.Duration
	Err     error // cut off during the window
}

// Rate is the rounds per second.
func (w probeWindow) Rate() float64 {
	if w.Seconds <= 0 {
		return 0
	}
	return float64(w.Rounds) / w.Seconds
}

// mark is a point in the probe's count.
type mark struct {
	at     time.Time
	rounds int64
}

func (p *probe) mark() mark {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latencies = p.latencies[:0]
	return mark{at: time.Now(), rounds: p.rounds}
}

// since returns the window from m to now.
func (p *probe) since(m mark) probeWindow {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := probeWindow{Rounds: p.rounds - m.rounds, Seconds: time.Since(m.at).Seconds()}
	if len(p.latencies) > 0 {
		l := slices.Clone(p.latencies)
		slices.Sort(l)
		w.P99 = l[(len(l)*99)/100]
	}
	if p.err != nil && !p.cutAt.Before(m.at) {
		w.Err = p.err
	}
	return w
}

// cut reports whether the probe is down (and why).
func (p *probe) cut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// run keeps the room going until ctx ends; when it is cut off it records
// why and reconnects (a fresh room name each time) for the next attack.
func (p *probe) run(ctx context.Context) {
	for gen := 0; ctx.Err() == nil; gen++ {
		err := p.session(ctx, fmt.Sprintf("%s-%d", p.room, gen))
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.err, p.cutAt = err, time.Now()
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// reset clears a past cut once the probe is back (the next attack starts
// from a working probe).
func (p *probe) reset() {
	p.mu.Lock()
	p.err = nil
	p.mu.Unlock()
}

func (p *probe) session(ctx context.Context, room string) error {
	cs := make([]*client, 0, p.users)
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	for i := range p.users {
		c, err := dialClient(ctx, p.addr)
		if err != nil {
			return fmt.Errorf("probe connect: %w", err)
		}
		cs = append(cs, c)
		if err := c.join(room, fmt.Sprintf("Probe%d", i+1), p.timeout); err != nil {
			return fmt.Errorf("probe user %d: %w", i+1, err)
		}
	}
	// Every user has seen the room fill (the others' EnterRoom indications
	// are skipped by expect as they come).
	stop := context.AfterFunc(ctx, func() {
		for _, c := range cs {
			_ = c.nc.SetDeadline(time.Now())
		}
	})
	defer stop()
	p.mu.Lock()
	p.err = nil
	p.mu.Unlock()
	interval := time.Duration(float64(time.Second) / p.rate)
	next := time.Now()
	for round := 0; ; round++ {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		if time.Until(next) < -time.Second {
			next = time.Now() // do not catch up after a stall
		}
		k := round % p.users
		start := time.Now()
		text := fmt.Sprintf("round %d", round)
		if err := cs[k].send(chatPacket(room, fmt.Sprintf("Probe%d", k+1), text)); err != nil {
			return fmt.Errorf("probe send: %w", err)
		}
		if _, err := cs[k].expect(protocol.IDChat, protocol.Confirm, p.timeout); err != nil {
			return fmt.Errorf("probe user %d, chat confirm: %w", k+1, err)
		}
		for i, c := range cs {
			if i == k {
				continue
			}
			f, err := c.expect(protocol.IDChat, protocol.Indication, p.timeout)
			if err != nil {
				return fmt.Errorf("probe user %d, chat indication: %w", i+1, err)
			}
			v, err := protocol.ParseChat(f.Body)
			if err != nil || string(protocol.TrimRaw(v.Text)) != text {
				return errors.New("probe: a chat indication is not the chat sent")
			}
		}
		lat := time.Since(start)
		p.mu.Lock()
		p.rounds++
		if len(p.latencies) < 1<<20 {
			p.latencies = append(p.latencies, lat)
		}
		p.mu.Unlock()
	}
}

// connProbe opens a fresh connection every interval (Access, then close)
// and counts those served: new users arriving during an attack.
type connProbe struct {
	addr     string
	interval time.Duration
	timeout  time.Duration

	mu     sync.Mutex
	ok     int64
	failed int64
	last   error
}

func (c *connProbe) run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.once(ctx)
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		if err == nil {
			c.ok++
		} else {
			c.failed++
			c.last = err
		}
		c.mu.Unlock()
	}
}

func (c *connProbe) once(ctx context.Context) error {
	cl, err := dialClient(ctx, c.addr)
	if err != nil {
		return err
	}
	defer cl.close()
	return cl.access("", c.timeout)
}

func (c *connProbe) counts() (ok, failed int64, last error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok, c.failed, c.last
}
