package handshake

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
