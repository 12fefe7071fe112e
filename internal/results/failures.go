package results

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Failure-set bounds: a document stays small however often a run fails.
const (
	// MaxFailureKinds bounds the kinds a FailureSet keeps; further kinds are
	// counted as FailOther.
	MaxFailureKinds = 64
	// MaxExampleBytes bounds a failure's example text.
	MaxExampleBytes = 1024
)

// FailureSet counts failures by kind and keeps the earliest example of each.
// It is safe for concurrent use. The zero value is ready to use.
type FailureSet struct {
	mu    sync.Mutex
	order []string
	kinds map[string]*Failure
}

// Add counts one failure of kind. example describes it (say, err.Error());
// the example kept is the one with the earliest at (the first added when
// times are equal or zero). An empty kind counts as FailOther.
func (s *FailureSet) Add(kind, example string, at time.Time) {
	s.AddN(kind, example, at, 1)
}

// AddN counts n failures of kind at once (n <= 0 counts nothing).
func (s *FailureSet) AddN(kind, example string, at time.Time, n int64) {
	if n <= 0 {
		return
	}
	if kind == "" {
		kind = FailOther
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		s.kinds = make(map[string]*Failure)
	}
	f := s.kinds[kind]
	if f == nil && len(s.order) >= MaxFailureKinds {
		if kind != FailOther {
			example = kind + ": " + example
		}
		kind = FailOther
		f = s.kinds[kind]
	}
	if f == nil {
		f = &Failure{Kind: kind, Example: clipExample(example), At: at}
		s.kinds[kind] = f
		s.order = append(s.order, kind)
		f.Count = n
		return
	}
	f.Count += n
	if !at.IsZero() && (f.At.IsZero() || at.Before(f.At)) {
		f.At = at
		f.Example = clipExample(example)
	}
}

// AddError counts err under Classify(err) with err.Error() as the example.
// A nil err counts nothing.
func (s *FailureSet) AddError(err error, at time.Time) {
	if err == nil {
		return
	}
	s.Add(Classify(err), err.Error(), at)
}

// Len is the number of kinds seen.
func (s *FailureSet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// Total is the number of failures of all kinds.
func (s *FailureSet) Total() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, f := range s.kinds {
		n += f.Count
	}
	return n
}

// List returns the failures, one per kind, in the order in which each kind
// first occurred (nil when there were none).
func (s *FailureSet) List() []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		return nil
	}
	out := make([]Failure, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, *s.kinds[k])
	}
	return out
}

func clipExample(s string) string {
	if len(s) <= MaxExampleBytes {
		return s
	}
	cut := MaxExampleBytes - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Classify maps an error from the network or the operating system to a
// failure kind: ECONNREFUSED is FailRefused, EMFILE and ENFILE
// FailOpenFiles, EADDRNOTAVAIL FailNoSourcePort, ECONNRESET, ECONNABORTED
// and EPIPE FailReset, a deadline (os.ErrDeadlineExceeded, a net.Error
// timeout, context.DeadlineExceeded, ETIMEDOUT) FailTimeout, io.EOF,
// io.ErrUnexpectedEOF, net.ErrClosed and io.ErrClosedPipe FailClosed,
// anything else FailOther (on Windows, the Winsock codes of the same
// conditions too). Classify(nil) is "". Kinds the network cannot tell
// (protocol, stall, integrity, ...) are the caller's to name.
func Classify(err error) (kind string) {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailRefused
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return FailOpenFiles
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return FailNoSourcePort
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return FailReset
	}
	for _, pe := range platformErrnos {
		if errors.Is(err, pe.errno) {
			return pe.kind
		}
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return FailTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrClosedPipe):
		return FailClosed
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return FailTimeout
	}
	return FailOther
}

// platformErrnos are the platform's own codes for the conditions Classify
// names (Winsock's on Windows), checked after the portable errnos.
var platformErrnos []struct {
	errno error
	kind  string
}

var descriptions = map[string]string{
	FailRefused:      "connection refused",
	FailOpenFiles:    "too many open files",
	FailNoSourcePort: "no free source port (address not available)",
	FailTimeout:      "timed out",
	FailReset:        "connection reset by peer",
	FailClosed:       "connection closed by the server",
	FailProtocol:     "protocol error",
	FailServerError:  "error reported by the server",
	FailDenied:       "access or room entry refused",
	FailStall:        "a room stalled",
	FailIntegrity:    "messages lost, duplicated or out of order",
	FailLost:         "messages lost",
	FailDuplicated:   "messages duplicated",
	FailCorrupted:    "messages corrupted",
	FailReordered:    "messages out of order (strict order)",
	FailOutside:      "packets from users outside the run (strict)",
	FailServerStart:  "the server did not start",
	FailShard:        "a shard failed",
	FailLeak:         "the server leaked connections, goroutines or descriptors",
	FailOther:        "other error",
}

// Describe is a human phrase for a failure kind, for footnotes
// (FailOpenFiles: "too many open files"); an unknown kind is returned as is.
func Describe(kind string) string {
	if d, ok := descriptions[kind]; ok {
		return d
	}
	return kind
}
