package campaign

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// progressEvery is how often a shard reports its progress to its parent.
const progressEvery = time.Second

// RunShard is a shard process (the hidden command `volanogo shard`): it
// reads its ShardSpec from the first line of in, runs it with the start
// barrier of the shard protocol (see handshake) on in and out, and writes
// its result document on out. It returns ErrFailed when the run failed,
// ErrInterrupted when ctx ended it, and other errors when it could not run
// at all. When in ends after the start (the parent is gone), the run is
// interrupted.
func RunShard(ctx context.Context, in io.Reader, out io.Writer) error {
	rd := bufio.NewReader(in)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read the shard's spec: %w", err)
	}
	var spec ShardSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("read the shard's spec: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &lineWriter{w: out}
	obs := &shardObserver{ctx: ctx, in: rd, w: w, cancel: cancel, stop: make(chan struct{})}
	doc, err := swarm.Run(ctx, spec.Spec, spec.Target, obs)
	obs.stopProgress()
	if err != nil {
		return err
	}
	stamp(doc, spec.RunID)
	doc.Shard = &results.Shard{Index: spec.Index, Count: spec.Count, Rooms: spec.Spec.Rooms}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode the shard's document: %w", err)
	}
	if err := w.line(handshake.Document(b)); err != nil {
		return fmt.Errorf("write the shard's document: %w", err)
	}
	switch {
	case doc.Interrupted:
		return ErrInterrupted
	case !doc.Passed:
		return ErrFailed
	}
	return nil
}

// lineWriter writes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := io.WriteString(l.w, s+"\n")
	return err
}

// shardObserver is the swarm's observer in a shard process: it reports
// progress and the end of the timed phase to the parent, and waits for
// the parent's start.
type shardObserver struct {
	ctx    context.Context
	in     *bufio.Reader
	w      *lineWriter
	cancel context.CancelFunc

	stop     chan struct{}
	stopOnce sync.Once
	ticker   sync.WaitGroup
}

func (o *shardObserver) Phase(ph swarm.Phase, p swarm.Progress) {
	switch ph {
	case swarm.PhaseSetup:
		o.ticker.Add(1)
		go o.report(p)
	case swarm.PhaseEnded:
		o.send(p)
		_ = o.w.line(handshake.ShardEnded)
	}
}

// report sends the progress every progressEvery until stopProgress.
func (o *shardObserver) report(p swarm.Progress) {
	defer o.ticker.Done()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		o.send(p)
		select {
		case <-t.C:
		case <-o.stop:
			return
		}
	}
}

func (o *shardObserver) send(p swarm.Progress) {
	if b, err := json.Marshal(p.Snapshot()); err == nil {
		_ = o.w.line(handshake.Progress(b))
	}
}

func (o *shardObserver) stopProgress() {
	o.stopOnce.Do(func() { close(o.stop) })
	o.ticker.Wait()
}

// Start reports ready and waits for the parent's start line; the end of
// the input first calls the run off. After the start, the end of the
// input (the parent is gone) interrupts the run.
func (o *shardObserver) Start(ctx context.Context) (time.Time, error) {
	if err := o.w.line(handshake.ShardReady); err != nil {
		return time.Time{}, err
	}
	type answer struct {
		at  time.Time
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := o.in.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errNoStart
			}
			ch <- answer{err: err}
			return
		}
		at, err := handshake.ParseStart(line)
		ch <- answer{at: at, err: err}
		if err == nil {
			// Anything more, or the end: the parent is gone.
			_, _ = io.Copy(io.Discard, o.in)
			o.cancel()
		}
	}()
	select {
	case a := <-ch:
		return a.at, a.err
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}
