package server

import (
	"math"
	"sync/atomic"
)

// loopShare counts a loop's connections: from their hand-over to it
// (loopEngine.serve) to its release of them.
type loopShare struct{ conns atomic.Int32 }

func (s *loopShare) share() *loopShare { return s }

// Default Config.LoopFill per engine: a ring's round sends its chats'
// copies in one io_uring_enter, so a small server's rings are filled one
// after the other; epoll loops share the connections evenly (the README's
// "Server engines" has the measurements).
const (
	epollLoopFill = 1
	uringLoopFill = 8192
)

// pickLoop returns the loop for a new connection: the first with fewer
// than fill connections, else the one with the fewest (the first of
// them). fill 1 spreads connections evenly; a larger fill keeps a small
// server's connections, and so its rooms, on one loop.
func pickLoop[L interface{ share() *loopShare }](loops []L, fill int) L {
	best, least := 0, int32(math.MaxInt32)
	for i, l := range loops {
		n := l.share().conns.Load()
		if int(n) < fill {
			return l
		}
		if n < least {
			best, least = i, n
		}
	}
	return loops[best]
}
