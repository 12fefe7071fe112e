package handshake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServe(t *testing.T) {
	s := Serve{Chat: "127.0.0.1:8000", Metrics: "127.0.0.1:8002"}
	assert.Equal(t, "volanogo serve listening: chat=127.0.0.1:8000 ws= metrics=127.0.0.1:8002", s.Line())
	got, ok := ParseServe(s.Line() + "\n")
	assert.True(t, ok)
	assert.Equal(t, s, got)

	got, ok = ParseServe("volanogo serve listening: chat=[::1]:8000 ws=[::1]:8080 metrics=")
	assert.True(t, ok)
	assert.Equal(t, Serve{Chat: "[::1]:8000", WS: "[::1]:8080"}, got)

	for _, line := range []string{"", "listening: chat=x", "time=... level=INFO msg=started"} {
		_, ok := ParseServe(line)
		assert.False(t, ok, line)
	}
}

func TestShardLines(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC)
	line := Start(at)
	assert.Equal(t, "start 2026-11-23T10:00:00.123456789Z", line)
	got, err := ParseStart(line + "\n")
	require.NoError(t, err)
	assert.True(t, at.Equal(got))
	for _, bad := range []string{"", "go", "start yesterday"} {
		_, err := ParseStart(bad)
		assert.Error(t, err, bad)
	}

	for _, tc := range []struct {
		line    string
		kind    ShardLine
		payload string
	}{
		{ShardReady, LineReady, ""},
		{ShardEnded, LineEnded, ""},
		{Progress([]byte(`{"sent":5}`)), LineProgress, `{"sent":5}`},
		{Document([]byte(`{"schema":1}`)), LineDocument, `{"schema":1}`},
		{"panic: something", LineOther, "panic: something"},
	} {
		kind, payload := ParseShardLine(tc.line)
		assert.Equal(t, tc.kind, kind, tc.line)
		assert.Equal(t, tc.payload, payload, tc.line)
	}
}
