package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseChatCaptures(t *testing.T) {
	chats := 0
	for _, raw := range capturedPackets(t) {
		if binaryID(raw) != IDChat {
			continue
		}
		chats++
		p, err := DecodeMessage(raw)
		require.NoError(t, err)
		c := p.(*Chat)
		v, err := ParseChat(raw[headerLen:])
		require.NoError(t, err)
		assert.Equal(t, c.Question, v.Question)
		assert.Equal(t, c.RoomID, v.RoomID)
		assert.Equal(t, c.RoomName, string(v.RoomName))
		assert.Equal(t, c.UserName, string(v.UserName))
		assert.Equal(t, c.Text, string(v.Text), "not trimmed")
		assert.Equal(t, raw, AppendChatView(nil, c.Type, v))
		assert.Equal(t, Trim(c.Text), string(TrimRaw(v.Text)))
		assert.Zero(t, testing.AllocsPerRun(50, func() { _, _ = ParseChat(raw[headerLen:]) }))
	}
	// 2 builds x 3 connections x (2 requests + 2 confirms + 4 indications)
	assert.Equal(t, 2*3*(2+2+4), chats, "chat packets in both captures")
}

func TestParseChatErrors(t *testing.T) {
	good := markChatRequest(t)[headerLen:]
	for cut := 0; cut < len(good); cut++ {
		_, err := ParseChat(good[:cut])
		assert.ErrorIs(t, err, ErrIncomplete, "cut at %d", cut)
	}
	_, err := ParseChat(append(good[:len(good):len(good)], 0))
	assert.ErrorIs(t, err, ErrTrailingData)

	bad := append([]byte(nil), good...)
	bad[len(bad)-1] = 0xE2
	_, err = ParseChat(bad)
	assert.ErrorIs(t, err, ErrMalformedString)
	assert.EqualError(t, err, `protocol: Chat: field "text" at byte 25: malformed modified UTF-8`)
}
