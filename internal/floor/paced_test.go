//go:build linux

package floor

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

func TestPacing(t *testing.T) {
	p, err := newPacing(3, 4, time.Second, 10*time.Second, 42)
	require.NoError(t, err)
	q, err := newPacing(3, 4, time.Second, 10*time.Second, 42)
	require.NoError(t, err)
	assert.Equal(t, p.offset, q.offset, "one seed, one schedule (the parent's and its child's)")
	assert.Len(t, p.offset, 12)
	for k, i := range p.order {
		assert.GreaterOrEqual(t, p.offset[i], int64(0))
		assert.Less(t, p.offset[i], int64(time.Second))
		if k > 0 {
			assert.LessOrEqual(t, p.offset[p.order[k-1]], p.offset[i], "sorted by offset")
		}
	}
	require.Len(t, p.confirm, 3)
	for r, b := range p.confirm {
		f, err := protocol.NewReader(bytes.NewReader(b), 1<<16).ReadPacket()
		require.NoError(t, err)
		c, ok := f.(*protocol.Chat)
		require.True(t, ok, "%T", f)
		assert.Equal(t, protocol.Confirm, c.Type)
		assert.Equal(t, roomName(r), c.RoomName)
	}
	chat := chatFrame()
	assert.Len(t, chat, MessageBytes)
	assert.Equal(t, byte(protocol.Indication), chat[typeAt])
}

func TestPacedServerWholeChats(t *testing.T) {
	p := newPacedServer(&script{users: 2, pacing: &pacing{confirm: [][]byte{{1}}}}, 2)
	buf := make([]byte, readBuf+MessageBytes)
	chat := func(c byte, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = c
		}
		return b
	}
	// a chat and a half, then the other half and another
	n := copy(buf, append(chat('a', MessageBytes), chat('b', MessageBytes/2)...))
	w, k := p.whole(0, buf, n)
	assert.Equal(t, MessageBytes, w)
	assert.Equal(t, 1, k)
	assert.Equal(t, chat('a', MessageBytes), buf[:w])
	n = copy(buf, append(chat('b', MessageBytes/2), chat('c', MessageBytes)...))
	w, k = p.whole(0, buf, n)
	assert.Equal(t, 2*MessageBytes, w)
	assert.Equal(t, 2, k)
	assert.Equal(t, append(chat('b', MessageBytes), chat('c', MessageBytes)...), buf[:w])
	// less than a chat: nothing to relay yet; connection 1 is apart
	n = copy(buf, chat('d', 10))
	w, k = p.whole(0, buf, n)
	assert.Zero(t, w+k)
	n = copy(buf, chat('e', MessageBytes))
	w, k = p.whole(1, buf, n)
	assert.Equal(t, MessageBytes, w)
	assert.Equal(t, 1, k)
	n = copy(buf, chat('d', MessageBytes-10))
	w, k = p.whole(0, buf, n)
	assert.Equal(t, MessageBytes, w)
	assert.Equal(t, 1, k)
	assert.Equal(t, chat('d', MessageBytes), buf[:w])

	assert.Equal(t, []byte{1}, p.confirms(0, 1))
	assert.Equal(t, []byte{1, 1, 1}, p.confirms(0, 3), "one send for the chats of one read")

	assert.Nil(t, newPacedServer(&script{users: 2}, 2), "turn-taking")
}

func TestPacedClientConsume(t *testing.T) {
	p, err := newPacing(2, 2, time.Second, time.Second, 1)
	require.NoError(t, err)
	d, s := results.NewHistogram(), results.NewHistogram()
	c := &pacedClient{p: p, part: make([]byte, 4*MessageBytes), partLen: make([]uint8, 4), delivery: d, scheduled: s}
	stamp := func(sched, sent int64) []byte {
		b := chatFrame()
		binary.LittleEndian.PutUint64(b[schedAt:], uint64(sched))
		binary.LittleEndian.PutUint64(b[sentAt:], uint64(sent))
		return b
	}
	// Room 2 (connections 2 and 3): a chat, its confirm, a chat, in
	// every split of the stream into two reads.
	var stream []byte
	stream = append(stream, stamp(100, 200)...)
	stream = append(stream, p.confirm[1]...)
	stream = append(stream, stamp(1000, 1500)...)
	for cut := 0; cut <= len(stream); cut++ {
		before := c.delivered
		require.NoError(t, c.consume(3, stream[:cut], 2000))
		require.NoError(t, c.consume(3, stream[cut:], 3000))
		assert.Equal(t, before+2, c.delivered, "cut at %d", cut)
		assert.Zero(t, c.partLen[3])
	}
	assert.Equal(t, int64(len(stream)+1), c.confirmed)
	assert.Equal(t, int64(2*(len(stream)+1)), d.TotalCount())
	assert.GreaterOrEqual(t, s.Min(), int64(1000))
	assert.LessOrEqual(t, d.Max(), int64(2810), "3000 - 200, within the histogram's precision")

	// A frame no server sends fails the client.
	bad := stamp(0, 0)
	bad[typeAt] = 9
	assert.ErrorContains(t, c.consume(0, bad, 1), "type 9")
}
