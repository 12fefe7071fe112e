package server

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// warnReasons are the close reasons that say a peer misbehaved or hit a
// limit: each is logged at warn level, at most once per reason per
// interval. The others (eof, read_error, write_error, access_denied,
// shutdown) are a client's ordinary comings and goings.
var warnReasons = map[string]bool{
	ReasonProtocol: true, ReasonTooLarge: true, ReasonFirstPacket: true, ReasonSecondAccess: true,
	ReasonTooLong: true, ReasonBadRequest: true, ReasonNotAllowed: true, ReasonSlowConsumer: true,
	ReasonIdle: true, ReasonAccessTimeout: true, ReasonHandshakeTimeout: true, ReasonNotInRoom: true,
	ReasonPacketTimeout: true, ReasonDisplaced: true,
}

// warner turns a flood of similar events into a bounded log: the first
// event of a kind is logged at once; the ones that follow within the
// interval are counted and logged as one line with their count when the
// interval is over. At most one line per kind per interval, whatever the
// rate of the events.
type warner struct {
	log      *slog.Logger
	interval time.Duration

	mu    sync.Mutex
	kinds map[warnKey]*warnCount
	timer *time.Timer
	done  bool
	debug map[string]*debugCount // debug lines by message
}

// debugInterval is the least time between two debug lines of one message
// about peers (a refused Access, a closed connection): a flood of peers
// must not flood the log, even at debug level.
const debugInterval = time.Second

type debugCount struct {
	last    time.Time
	dropped int // lines left out since the last one
}

type warnKey struct{ what, reason string }

type warnCount struct {
	n            int    // events not yet logged
	last         string // remote of the last one
	detail       string // what was wrong with the last one, when known
	lastLine     time.Time
	pendingSince time.Time
}

func newWarner(log *slog.Logger, interval time.Duration) *warner {
	return &warner{log: log, interval: interval, kinds: map[warnKey]*warnCount{}, debug: map[string]*debugCount{}}
}

// debugf logs a debug line about a peer, at most one per message per
// debugInterval; the next one that is logged says how many were left
// out. Peers' text in attrs must be clipped (clip).
func (w *warner) debugf(msg string, attrs ...any) {
	if !w.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	c := w.debug[msg]
	if c == nil {
		c = &debugCount{}
		w.debug[msg] = c
	}
	if now.Sub(c.last) < debugInterval {
		c.dropped++
		w.mu.Unlock()
		return
	}
	dropped := c.dropped
	c.last, c.dropped = now, 0
	w.mu.Unlock()
	if dropped > 0 {
		attrs = append(attrs, "left_out", dropped)
	}
	w.log.Debug(msg, attrs...)
}

// maxQuoted is the most bytes of a peer's text that a log line quotes.
const maxQuoted = 64

// clip is at most n bytes of s, cut at a character boundary, saying how
// many bytes it left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "... (" + strconv.Itoa(len(s)-cut) + " more bytes)"
}

// note records one event: what happened ("closed", "refused"), why, to
// whom, and any detail.
func (w *warner) note(what, reason, remote, detail string) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	k := warnKey{what, reason}
	c := w.kinds[k]
	if c == nil {
		c = &warnCount{}
		w.kinds[k] = c
	}
	c.n++
	c.last, c.detail = remote, detail
	if now.Sub(c.lastLine) >= w.interval {
		w.emitLocked(k, c, now)
		return
	}
	if c.pendingSince.IsZero() {
		c.pendingSince = now
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(c.lastLine.Add(w.interval).Sub(now), w.flush)
	}
}

func (w *warner) emitLocked(k warnKey, c *warnCount, now time.Time) {
	attrs := []any{"reason", k.reason, "count", c.n, "last_remote", c.last}
	if c.detail != "" {
		attrs = append(attrs, "last_error", c.detail)
	}
	if !c.pendingSince.IsZero() {
		attrs = append(attrs, "since", c.pendingSince.Format(time.RFC3339))
	}
	msg := "connections closed"
	if k.what == "refused" {
		msg = "connections or requests refused"
	}
	w.log.Warn(msg, attrs...)
	c.n, c.lastLine, c.pendingSince = 0, now, time.Time{}
}

// flush logs every kind whose interval is over and re-arms itself for
// the rest.
func (w *warner) flush() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.done {
		return
	}
	keys := make([]warnKey, 0, len(w.kinds))
	for k := range w.kinds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].what+keys[i].reason < keys[j].what+keys[j].reason })
	var next time.Duration
	for _, k := range keys {
		c := w.kinds[k]
		if c.n == 0 {
			continue
		}
		if wait := c.lastLine.Add(w.interval).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		w.emitLocked(k, c, now)
	}
	if next > 0 {
		w.timer = time.AfterFunc(next, w.flush)
	}
}

// stop logs what is pending and stops the timer.
func (w *warner) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	now := time.Now()
	for k, c := range w.kinds {
		if c.n > 0 {
			w.emitLocked(k, c, now)
		}
	}
}
