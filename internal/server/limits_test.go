//go:build linux

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestOpenFilesExhaustion runs the server in a child process with 64 open
// files, fills them, and requires that (1) connections over the limit are
// closed at once rather than left waiting in the backlog, and (2) a room
// opened before keeps chatting.
func TestOpenFilesExhaustion(t *testing.T) { forEngines(t, testOpenFilesExhaustion) }

func testOpenFilesExhaustion(t *testing.T, engine string) {
	const limit = 64
	child := startChild(t, engine, limit)

	// A room of two users, opened before the exhaustion.
	a := dialAddr(t, child.addr)
	a.access("Survivors")
	a.enter("Survivors", "alice")
	b := dialAddr(t, child.addr)
	b.access("Survivors")
	b.enter("Survivors", "bob")
	a.expect()

	// Fill the server's descriptors; the kernel completes the handshakes
	// whatever the server does, so dialing succeeds; what matters is what
	// the server does next.
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	refused := 0
	for i := 0; i < limit+20 && refused < 5; i++ {
		nc, err := net.DialTimeout("tcp", child.addr, 2*time.Second)
		require.NoError(t, err)
		held = append(held, nc)
		// An accepted connection stays open and answers an Access; one over
		// the limit is closed straight away.
		bs, err := markAccess("").AppendPacket(nil)
		require.NoError(t, err)
		_, _ = nc.Write(bs)
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = protocol.NewReader(nc, 0).Next()
		if err != nil {
			require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection %d left waiting without a reply", i)
			assert.True(t, errors.Is(err, io.EOF) || isReset(err), "connection %d: %v", i, err)
			refused++
		}
	}
	require.Equal(t, 5, refused, "the server never ran out of descriptors")
	waitFor(t, "the log line", func() bool { return strings.Contains(child.stderr.String(), "out of file descriptors") })
	log := child.stderr.String()
	assert.Contains(t, log, "open_files_soft_limit=64")
	assert.Contains(t, log, "remedy=")
	assert.LessOrEqual(t, strings.Count(log, "out of file descriptors"), 2, "logged at most once a second")

	// The room opened before still works, both ways.
	for i := range 10 {
		a.send(chat("Survivors", "alice", "still here "+strconv.Itoa(i)))
		assert.Equal(t, protocol.Confirm, a.expect().PacketType())
		assert.Equal(t, "still here "+strconv.Itoa(i), b.expect().(*protocol.Chat).Text)
	}
	b.send(chat("Survivors", "bob", "me too"))
	assert.Equal(t, "me too", a.expect().(*protocol.Chat).Text)

	// Descriptors freed: the very first new connection is served (the
	// reserve was taken back on the accept loop's next pass, not left
	// gone after a failed reopen; and the accept that the last failed
	// pass makes with the reserve let go, which may still be waiting,
	// serves it rather than refuses it).
	for _, c := range held {
		c.Close()
	}
	held = nil
	waitFor(t, "the server's descriptors freed", func() bool {
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(child.cmd.Process.Pid) + "/fd")
		return err == nil && len(fds) < limit-10
	})
	nc, err := net.DialTimeout("tcp", child.addr, 2*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	bs, err := markAccess("").AppendPacket(nil)
	require.NoError(t, err)
	_, err = nc.Write(bs)
	require.NoError(t, err)
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	p, err := protocol.NewReader(nc, 0).ReadPacket()
	require.NoError(t, err, "the first connection after the exhaustion is served; server log:\n%s", child.stderr.String())
	assert.Equal(t, protocol.AccessOK, p.(*protocol.Access).Result)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
