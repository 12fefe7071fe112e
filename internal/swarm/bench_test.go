package swarm

import (
	"testing"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// BenchmarkReceive is a user's work per chat indication, the socket
// aside: split the packet, view it, check its turn, time it.
func BenchmarkReceive(b *testing.B) {
	rs := &runState{spec: &Spec{Count: 1 << 30}, shards: []*histShard{{}}}
	rs.timeline = results.NewTimelineRecorder(time.Now())
	r, err := newRoom(rs, 0, 1, 20)
	if err != nil {
		b.Fatal(err)
	}
	// One chat of each user; each pass over the stream gives every chat
	// the next number, as the users' next turn would.
	var stream []byte
	var numbers []int
	for i := 0; i < 20; i++ {
		stream, _ = (&protocol.Chat{Type: protocol.Indication, RoomName: r.name, UserName: r.users[i].name,
			Text: numberedText(i+1, 1)[:59]}).AppendPacket(stream)
		numbers = append(numbers, len(stream)-59+numberDigits+1)
	}
	u := r.users[0]
	src := &loopReader{b: stream, numbers: numbers, j: 1}
	u.rd = protocol.NewReader(src, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream) / 20))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := u.rd.Next()
		if err != nil {
			b.Fatal(err)
		}
		v, err := protocol.ParseChat(f.Body)
		if err != nil {
			b.Fatal(err)
		}
		u.seen(f)
		// Mark1 never receives its own chats: pretend its own are sent.
		s := markNumber(v.UserName)
		if s == 1 {
			u.sent++
			continue
		}
		if !u.acceptTurn(v.UserName, v.Text, s, 20) {
			b.Fatal("a chat did not count")
		}
	}
	b.StopTimer()
	if f := rs.failures.List(); f != nil {
		b.Fatalf("failures: %+v", f)
	}
}

// loopReader repeats b forever, numbering the chats at numbers (offsets
// in b) j on pass j.
type loopReader struct {
	b       []byte
	off     int
	numbers []int
	j       int64
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.off:])
	l.off += n
	if l.off == len(l.b) {
		l.off = 0
		l.j++
		for _, at := range l.numbers {
			putNumber(l.b[at:], l.j)
		}
	}
	return n, nil
}
