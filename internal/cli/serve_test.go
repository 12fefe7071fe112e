package cli

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeStartsAndStops(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.txt")
	require.NoError(t, os.WriteFile(rooms, []byte("# permanent rooms\nLobby\n\n  Games  \n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
			"--rooms-file", rooms, "--room", "Extra", "--log-level", "debug"}, nil, &out, &errb)
	}()
	var chatAddr string
	require.Eventually(t, func() bool {
		hs, ok := handshake.ParseServe(out.String())
		if !ok {
			return false
		}
		chatAddr = hs.Chat
		return true
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "metrics=127.0.0.1:")
	assert.Contains(t, out.String(), "ws= ")
	nc, err := net.Dial("tcp", chatAddr)
	require.NoError(t, err)
	defer nc.Close()
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of the signal")
	}
	assert.Contains(t, errb.String(), "rooms=3")
	assert.Contains(t, errb.String(), "draining")
	// the open connection was closed by the server, cleanly (a FIN, not a
	// reset)
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
}

func TestServeBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"serve", "--room-limit", "0"}, 2, "--room-limit must be positive"},
		{[]string{"serve", "--room-limit", "many"}, 2, "invalid argument"},
		{[]string{"serve", "--idle-timeout", "5"}, 2, "missing unit"},
		{[]string{"serve", "--access-timeout=-1s"}, 2, "--access-timeout must not be negative"},
		{[]string{"serve", "--max-private=-1"}, 2, "--max-private must not be negative"},
		{[]string{"serve", "--max-rooms=-5"}, 2, "--max-rooms must not be negative"},
		{[]string{"serve", "--request-rate=-5"}, 2, "--request-rate must not be negative"},
		{[]string{"serve", "--room-list-max", "0"}, 2, "--room-list-max must be positive"},
		{[]string{"serve", "--drain-timeout", "0s"}, 2, "--drain-timeout must be positive"},
		{[]string{"serve", "--bogus"}, 2, "--bogus: illegal argument"},
		{[]string{"serve", "extra"}, 2, "unknown command"},
		{[]string{"serve", "--rooms-file", "/nonexistent/rooms.txt"}, 1, "/nonexistent/rooms.txt"},
		{[]string{"serve", "--room", "A", "--room", "A", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, 2, `"A" is given twice`},
		{[]string{"serve", "--listen", "", "--metrics-listen", ""}, 2, "nothing to serve"},
	} {
		code, _, errOut := run(t, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}
