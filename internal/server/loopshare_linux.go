package server

import (
	"math"
	"sync/atomic"
)

// loopShare counts a loop's connections: from their hand-over to it
// (loopEngine.serve) to its release of them.
type loopShare struct{ conns atomic.Int32 }

func (s *loopShare) share() *loopShare { return s }

// Default Config.LoopFill per engine. Two epoll loops cost the server
// the same filled first or spread; two rings do not: a ring's round sends
// its chats' copies in one io_uring_enter, and two rings halve each
// round. Measured on 2 processors (the client on the same machine,
// 3 rounds, server CPU per message and msg/s, medians), two rings filled
// 8,192 deep against two spread evenly: 3.37 against 3.63 us and 277k
// against 241k msg/s at 15 rooms × 200 (one ring: 3.36 us, 274k), 5.53
// against 5.60 us at 475 × 10, 6.63 against 6.78 us at 950 × 5 (one
// ring: 5.73 and 9.70 us). Two epoll loops filled first against spread:
// the same server figures (within 2%), and the client's CPU 11% higher
// at 15 rooms (its reads come in thinner batches).
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
