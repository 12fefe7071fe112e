package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHotPathAllocs pins the allocation-free paths the server and the load
// client rely on (the benchmarks show the same with -benchmem).
func TestHotPathAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters change allocation counts")
	}
	stream := append(markChatRequest(t), markChatIndication(t)...)
	r := NewReader(&loopReader{data: stream, chunk: 1460}, 0)
	next := func() {
		f, err := r.Next()
		require.NoError(t, err)
		_, err = ParseChat(f.Body)
		require.NoError(t, err)
	}
	next() // the buffer is allocated on first use
	assert.Zero(t, testing.AllocsPerRun(1000, next), "Reader.Next + ParseChat")

	p := &Chat{Type: Indication, RoomName: "Room1", UserName: "Mark2", Text: "123456789"}
	buf := make([]byte, 0, 128)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		buf, _ = p.AppendPacket(buf[:0])
	}), "Chat.AppendPacket")

	v, err := ParseChat(markChatRequest(t)[headerLen:])
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		v.Text = TrimRaw(v.Text)
		_ = UTF16Len(v.Text)
		buf = AppendChatView(buf[:0], Indication, v)
	}), "TrimRaw + UTF16Len + AppendChatView")

	// A non-blocking source's "nothing now" (a timeout error), as the
	// server's epoll engine ends every read with.
	var quiet wouldBlockReader
	qr := NewReader(&quiet, 0)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_, err := qr.Next()
		require.Error(t, err)
	}), "Reader.Next on a timeout")

	in := markChatIndication(t)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { _, _, _ = Decode(in) }), 2.0,
		"Decode of a chat: the struct and one string")
}

// wouldBlockReader never has anything: a timeout each time.
type wouldBlockReader struct{}

func (*wouldBlockReader) Read([]byte) (int, error) { return 0, wouldBlock{} }

type wouldBlock struct{}

func (wouldBlock) Error() string { return "would block" }
func (wouldBlock) Timeout() bool { return true }
