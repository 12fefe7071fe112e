package swarm

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestHotLines checks the layout that keeps a user's per-packet state on
// few cache lines: the user's hot fields (up to its ledger's maxK) on its
// first two lines and the link's on its first, both objects aligned to
// lines by the allocator (a size class of a multiple of 64 bytes: any
// size past 480, or 192).
func TestHotLines(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the sizes are those of a 64-bit platform")
	}
	var u user
	assert.Greater(t, unsafe.Sizeof(u), uintptr(480), "user: past 480 bytes, a line-aligned size class")
	assert.LessOrEqual(t, unsafe.Offsetof(u.ledger)+unsafe.Offsetof(u.ledger.maxK)+8, uintptr(128), "user: hot fields on two lines")
	assert.Equal(t, uintptr(192), unsafe.Sizeof(link{}), "link: a line-aligned size class")
	var l link
	assert.LessOrEqual(t, unsafe.Offsetof(l.writeTimeout)+8, uintptr(64), "link: hot fields on one line")
}

// TestChatView checks the short cut of a Chat indication's decode against
// protocol.ParseChat: whatever it reads, ParseChat reads the same, with
// no error; what it does not read (strings not all ASCII, a wrong
// layout) goes to ParseChat.
func TestChatView(t *testing.T) {
	var bodies [][]byte
	for _, c := range []protocol.Chat{
		{Type: protocol.Indication, RoomName: "Room1", UserName: "Mark2", Text: numberedText(2, 7)[:59]},
		{Type: protocol.Indication, Question: true, RoomID: 3, RoomName: "", UserName: "", Text: ""},
		{Type: protocol.Indication, RoomName: "Raum", UserName: "Jürgen", Text: "grüß dich"},
		{Type: protocol.Indication, RoomName: "R", UserName: "M", Text: "nul \x00 inside"},
	} {
		pkt, err := c.AppendPacket(nil)
		require.NoError(t, err)
		body := pkt[6:] // the header
		bodies = append(bodies, body, body[:len(body)-1], append(append([]byte{}, body...), 0))
		for i := 0; i < len(body); i++ {
			for _, x := range []byte{0x00, 0x7f, 0x80, 0xc0, 0xff} {
				b := append([]byte{}, body...)
				b[i] = x
				bodies = append(bodies, b)
			}
		}
	}
	fast := 0
	for _, b := range bodies {
		v, ok := chatView(b)
		want, err := protocol.ParseChat(b)
		if !ok {
			continue
		}
		fast++
		require.NoError(t, err, "%q", b)
		assert.Equal(t, want, v, "%q", b)
	}
	assert.Positive(t, fast)
	_, ok := chatView([]byte{0, 0, 0, 0, 0, 0, 1, 0xc3, 0, 0, 0, 0})
	assert.False(t, ok, "a non-ASCII string goes to ParseChat")
}
