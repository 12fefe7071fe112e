package load

import (
	"testing"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// BenchmarkReceive is a user's work per chat indication, the socket
// aside: split the packet, view it, check its turn, time it.
func BenchmarkReceive(b *testing.B) {
	rs := &runState{cfg: &Config{Count: 1 << 30}, shards: []*histShard{{}}}
	rs.timeline = results.NewTimelineRecorder(time.Now())
	r, err := newRoom(rs, 0, 1, 20)
	if err != nil {
		b.Fatal(err)
	}
	var stream []byte
	for i := 0; i < 20; i++ {
		stream, _ = (&protocol.Chat{Type: protocol.Indication, RoomName: r.name, UserName: r.users[i].name,
			Text: MarkText[:59]}).AppendPacket(stream)
	}
	u := r.users[0]
	src := &loopReader{b: stream}
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
		if markNumber(v.UserName) == 1 {
			u.seq++
			continue
		}
		u.acceptTurn(v.UserName, 20, nanotime())
	}
}

// loopReader repeats b forever.
type loopReader struct {
	b   []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.off:])
	l.off = (l.off + n) % len(l.b)
	return n, nil
}
