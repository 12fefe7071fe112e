// Package leak checks that tests leave no goroutine behind. It compares
// the goroutines by id before and after, so that a goroutine that ended
// cannot hide one that leaked, and it leaves out the goroutines that the
// runtime and the testing package start for themselves: the signal loop
// (started once per process by the first signal.Notify, for instance by
// the fuzzing coordinator to catch ^C) and the fuzzing engine's own.
//
// It imports nothing of the module, so that the tests of any package,
// pkg/protocol and internal/server included, can use it.
package leak

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Goroutine is one goroutine of a stack dump.
type Goroutine struct {
	ID    uint64
	Stack string // the whole entry, header line included
}

// exempt lists stack fragments of goroutines that belong to the runtime
// or to the testing package, which live as long as the process does.
var exempt = []string{
	"os/signal.signal_recv", // signal.Notify's loop, started once per process
	"os/signal.loop",        //
	"runtime.ensureSigM",    // the runtime's signal-mask keeper, same origin
	"internal/fuzz.",        // the fuzzing engine (coordinator and worker)
	"testing.(*F).Fuzz",     //
	"testing.runFuzzing",    //
}

// Exempt reports whether g is one of the runtime's or the testing
// package's own goroutines.
func Exempt(g Goroutine) bool {
	for _, e := range exempt {
		if strings.Contains(g.Stack, e) {
			return true
		}
	}
	return false
}

// Snapshot returns the goroutines running now, but the caller's.
func Snapshot() []Goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []Goroutine
	first := true
	for entry := range bytes.SplitSeq(buf, []byte("\n\n")) {
		self := first
		first = false
		header, _, _ := bytes.Cut(entry, []byte("\n"))
		rest, ok := bytes.CutPrefix(header, []byte("goroutine "))
		if !ok || self {
			continue // the first entry is the caller's own goroutine
		}
		idText, _, _ := bytes.Cut(rest, []byte(" "))
		id, err := strconv.ParseUint(string(idText), 10, 64)
		if err != nil {
			continue
		}
		gs = append(gs, Goroutine{ID: id, Stack: string(entry)})
	}
	return gs
}

// Since returns the goroutines running now that were not in before and
// are not exempt.
func Since(before []Goroutine) []Goroutine {
	old := make(map[uint64]bool, len(before))
	for _, g := range before {
		old[g.ID] = true
	}
	var leaked []Goroutine
	for _, g := range Snapshot() {
		if !old[g.ID] && !Exempt(g) {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

// Wait waits up to grace for the goroutines started since before to end
// and returns those still running.
func Wait(before []Goroutine, grace time.Duration) []Goroutine {
	deadline := time.Now().Add(grace)
	for {
		leaked := Since(before)
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Format writes the goroutines' stacks, sorted so that alike ones are together.
func Format(w io.Writer, gs []Goroutine) {
	gs = slices.Clone(gs)
	slices.SortFunc(gs, func(a, b Goroutine) int { return strings.Compare(a.Stack, b.Stack) })
	for _, g := range gs {
		fmt.Fprintf(w, "%s\n\n", g.Stack)
	}
}

// Grace is how long Main waits for goroutines to end after the tests.
const Grace = 2 * time.Second

// Main runs m and returns its exit code, or 1 if the tests passed but left
// goroutines running (their stacks go to stderr). Use it as
//
//	func TestMain(m *testing.M) { os.Exit(leak.Main(m)) }
func Main(m *testing.M) int {
	before := Snapshot()
	code := m.Run()
	if code != 0 {
		return code
	}
	if leaked := Wait(before, Grace); len(leaked) > 0 {
		// The test binary's report goes where the testing package writes its own.
		fmt.Fprintf(os.Stderr, "leaked %d goroutines:\n", len(leaked)) //nolint:forbidigo // see above
		Format(os.Stderr, leaked)                                      //nolint:forbidigo // see above
		return 1
	}
	return 0
}

// Check fails t if goroutines started during it are still running grace
// after its end (three seconds when grace is 0).
func Check(t testing.TB, grace time.Duration) {
	t.Helper()
	if grace == 0 {
		grace = 3 * time.Second
	}
	before := Snapshot()
	t.Cleanup(func() {
		if leaked := Wait(before, grace); len(leaked) > 0 {
			var b strings.Builder
			Format(&b, leaked)
			t.Errorf("%d goroutines started during the test are still running:\n%s", len(leaked), b.String())
		}
	})
}
