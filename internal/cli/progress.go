package cli

import (
	"fmt"
	"io"
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
// percentage, the rate and the time left. A nil progressLine shows
// nothing.
type progressLine struct {
	w     io.Writer
	width func() int

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newProgressLine(w io.Writer) *progressLine {
	return &progressLine{w: w, width: func() int { return terminalWidth(w) }}
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
				fmt.Fprintf(p.w, "\r\033[K%s", fit(progressText(src(), &rate, now), p.width()-1))
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

// rateMeter is messages per second between two redraws.
type rateMeter struct {
	last  int64
	at    time.Time
	valid bool
}

func (r *rateMeter) update(total int64, now time.Time) (float64, bool) {
	defer func() { r.last, r.at, r.valid = total, now, true }()
	if !r.valid || !now.After(r.at) || total < r.last {
		return 0, false
	}
	return float64(total-r.last) / now.Sub(r.at).Seconds(), true
}

// progressText is the progress line's text.
func progressText(p campaign.Progress, rate *rateMeter, now time.Time) string {
	shards := ""
	if p.Shards > 0 {
		shards = fmt.Sprintf(", %d shard processes (%d running, %d ended)", p.Shards, p.ShardsReady, p.ShardsEnded)
	}
	if p.Phase == swarm.PhaseSetup {
		return fmt.Sprintf("set-up: %s of %s rooms, %s connections%s",
			count(int64(p.RoomsReady)), count(int64(p.Rooms)), count(p.Open), shards)
	}
	done := p.Sent + p.Received
	var b strings.Builder
	b.WriteString("running: ")
	b.WriteString(count(done))
	if p.Expected > 0 {
		fmt.Fprintf(&b, " of %s messages (%d%%)", count(p.Expected), min(100, done*100/p.Expected))
	} else {
		b.WriteString(" messages")
	}
	if r, ok := rate.update(done, now); ok {
		fmt.Fprintf(&b, ", %s/s", count(int64(r+0.5)))
		if p.Expected > done && r > 0 {
			left := time.Duration(float64(p.Expected-done) / r * float64(time.Second))
			fmt.Fprintf(&b, ", %s left", left.Round(time.Second))
		}
	}
	fmt.Fprintf(&b, ", %s connections%s", count(p.Open), shards)
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
