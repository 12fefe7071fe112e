package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/swarm"
)

// progressLine shows a run's progress on one line of a terminal, redrawn
// once a second and cut to the terminal's width: the set-up's rooms and
// connections, then the messages done of the run's total with the
// percentage, the smoothed rate and the time left, and for a campaign of
// several runs the time left to its end. A nil progressLine shows
// nothing. (Its own code rather than a progress-bar library such as mpb:
// one redrawn line, no bars, and an ETA over a campaign's runs, which such
// libraries do not know.)
type progressLine struct {
	w     io.Writer
	width func() int
	eta   *campaignETA

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newProgressLine(w io.Writer) *progressLine {
	return &progressLine{w: w, width: func() int { return terminalWidth(w) }, eta: &campaignETA{}}
}

// terminalWidth is w's width in columns when it is a terminal, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// show redraws the line from src every second until the next show or end.
func (p *progressLine) show(src func() campaign.Progress) {
	if p == nil {
		return
	}
	p.end()
	p.mu.Lock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	stop, done := p.stop, p.done
	p.mu.Unlock()
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var rate rateMeter
		for {
			select {
			case <-stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case now := <-t.C:
				fmt.Fprintf(p.w, "\r\033[K%s", fit(progressText(src(), &rate, p.eta, now), p.width()-1))
			}
		}
	}()
}

// end erases the line and stops redrawing it.
func (p *progressLine) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// rateTau is the time constant of the smoothed rate: a sample's weight
// falls by e every rateTau, so the rate follows a change within several
// seconds without the jumps of one second's count.
const rateTau = 5 * time.Second

// rateMeter is messages per second, exponentially weighted over the
// samples (rateTau), corrected for its start so that the first seconds are
// their plain mean rather than a rate pulled towards zero.
type rateMeter struct {
	last  int64
	at    time.Time
	valid bool
	s, w  float64 // the weighted rate and the weight so far
}

func (r *rateMeter) update(total int64, now time.Time) (float64, bool) {
	defer func() { r.last, r.at, r.valid = total, now, true }()
	if total < r.last {
		r.s, r.w = 0, 0 // another run's counts: start again
	}
	if !r.valid || !now.After(r.at) || total < r.last {
		return r.rate()
	}
	dt := now.Sub(r.at).Seconds()
	x := float64(total-r.last) / dt
	a := 1 - math.Exp(-dt/rateTau.Seconds())
	r.s += a * (x - r.s)
	r.w += a * (1 - r.w)
	return r.rate()
}

func (r *rateMeter) rate() (float64, bool) {
	if r.w <= 0 {
		return 0, false
	}
	return r.s / r.w, true
}

// campaignETA estimates the time left to a campaign's end from the work
// done and left: each run weighs its rooms (the messages of a run with a
// -count grow with them; a run of a fixed --duration weighs 1), the runs
// done give the seconds per unit of weight (set-ups and restarts
// included), and the run in progress adds its own time left. Safe for the
// progress line's goroutine.
type campaignETA struct {
	mu        sync.Mutex
	steps     []int // rooms of each step, once per server processor count
	perStep   int   // runs a step (RunInfo.Runs)
	byRooms   bool  // a run's weight is its rooms (else 1)
	started   time.Time
	runAt     time.Time // the current run's start
	runWeight float64
	planned   float64 // the weight of every run, retries added
	done      float64 // the weight of the runs done
	doneAt    time.Time
	runs, of  int // runs begun, runs planned
}

// plan sets what the campaign will run: steps (rooms) once per processor
// count; byRooms when runs have a -count (their work grows with rooms). No
// steps (a search of the limit): no campaign ETA.
func (e *campaignETA) plan(steps []int, cpus int, byRooms bool) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps, e.byRooms = nil, byRooms
	for _, r := range steps {
		for range max(cpus, 1) {
			e.steps = append(e.steps, r)
		}
	}
}

func (e *campaignETA) weight(rooms int) float64 {
	if e.byRooms {
		return float64(max(rooms, 1))
	}
	return 1
}

// runStarting notes a run's start at now.
func (e *campaignETA) runStarting(r campaign.RunInfo, now time.Time) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started.IsZero() {
		e.started, e.perStep = now, max(r.Runs, 1)
		for _, rooms := range e.steps {
			e.planned += float64(e.perStep) * e.weight(rooms)
		}
		e.of = len(e.steps) * e.perStep
	}
	e.runAt, e.runWeight = now, e.weight(r.Rooms)
	e.runs++
	if r.Attempt > 1 {
		e.planned += e.runWeight // a try more
		e.of++
	}
}

// runDone notes the end of the current run at now.
func (e *campaignETA) runDone(now time.Time) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done += e.runWeight
	e.doneAt, e.runWeight = now, 0
}

// left is the time to the campaign's end at now, given the current run's
// time left (runLeft, when known); ok is false for a single run or when
// nothing yet tells the pace.
func (e *campaignETA) left(now time.Time, runLeft time.Duration, runLeftOK bool) (time.Duration, bool) {
	if e == nil {
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.of <= 1 || e.started.IsZero() {
		return 0, false
	}
	var perWeight float64 // seconds per unit of weight
	switch {
	case e.done > 0:
		perWeight = e.doneAt.Sub(e.started).Seconds() / e.done
	case runLeftOK && e.runWeight > 0:
		perWeight = (now.Sub(e.runAt) + runLeft).Seconds() / e.runWeight
	default:
		return 0, false
	}
	if !runLeftOK {
		runLeft = max(0, time.Duration((e.runWeight*perWeight-now.Sub(e.runAt).Seconds())*float64(time.Second)))
	}
	rest := max(0, e.planned-e.done-e.runWeight)
	return runLeft + time.Duration(rest*perWeight*float64(time.Second)), true
}

// progressText is the progress line's text.
func progressText(p campaign.Progress, rate *rateMeter, eta *campaignETA, now time.Time) string {
	shards := ""
	if p.Shards > 0 {
		shards = fmt.Sprintf(", %d shard processes (%d running, %d ended)", p.Shards, p.ShardsReady, p.ShardsEnded)
	}
	if p.Phase == swarm.PhaseSetup {
		all := ""
		if l, ok := eta.left(now, 0, false); ok {
			all = fmt.Sprintf("; all runs %s left", l.Round(time.Second))
		}
		return fmt.Sprintf("set-up: %s of %s rooms, %s connections%s%s",
			count(int64(p.RoomsReady)), count(int64(p.Rooms)), count(p.Open), all, shards)
	}
	done := p.Sent + p.Received
	var b strings.Builder
	b.WriteString("running: ")
	b.WriteString(count(done))
	if p.Expected > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", count(p.Expected), min(100, done*100/p.Expected))
	} else {
		b.WriteString(" messages")
	}
	var runLeft time.Duration
	runLeftOK := false
	if r, ok := rate.update(done, now); ok {
		fmt.Fprintf(&b, ", %s/s", count(int64(r+0.5)))
		if p.Expected > done && r > 0 {
			runLeft, runLeftOK = time.Duration(float64(p.Expected-done)/r*float64(time.Second)), true
			fmt.Fprintf(&b, ", %s left", runLeft.Round(time.Second))
		}
	}
	if l, ok := eta.left(now, runLeft, runLeftOK); ok {
		if runLeftOK {
			fmt.Fprintf(&b, " (all runs %s)", l.Round(time.Second))
		} else {
			fmt.Fprintf(&b, "; all runs %s left", l.Round(time.Second))
		}
	}
	fmt.Fprintf(&b, "; %s connections%s", count(p.Open), shards)
	return b.String()
}

// count prints n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fit cuts s to width columns (runes), ending in "…" when cut.
func fit(s string, width int) string {
	if width < 1 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}
