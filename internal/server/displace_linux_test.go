//go:build linux

package server

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestDisplaceAtOpenFilesLimit: a server whose descriptors are all taken
// by connections that sent no Access for a second, or that are held for
// what they sent, serves a new user rather than refuse it (a child
// process with 64 open files, as TestOpenFilesExhaustion).
func TestDisplaceAtOpenFilesLimit(t *testing.T) { forEngines(t, testDisplaceAtOpenFilesLimit) }

func testDisplaceAtOpenFilesLimit(t *testing.T, engine string) {
	for _, kind := range []string{"silent", "held"} {
		t.Run(kind, func(t *testing.T) {
			const limit = 64
			child := startChild(t, engine, limit)
			var conns []net.Conn
			t.Cleanup(func() {
				for _, nc := range conns {
					nc.Close()
				}
			})
			start := time.Now()
			for range limit + 10 {
				nc, err := net.DialTimeout("tcp", child.addr, 2*time.Second)
				require.NoError(t, err)
				conns = append(conns, nc)
				if kind == "held" {
					_, _ = nc.Write(refusedAccess)
				}
			}
			// Those over the limit were closed at once: the server is full.
			time.Sleep(200 * time.Millisecond)
			refused := 0
			buf := make([]byte, 1)
			for _, nc := range conns {
				_ = nc.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := nc.Read(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					refused++
				}
			}
			require.Positive(t, refused, "the server never ran out of descriptors")
			if kind == "silent" {
				// Every silent one old enough, and a scan since: a user
				// who comes while none is old enough is refused (and
				// would get in on a retry), which is not what this tests.
				time.Sleep(displaceAge + 4*displaceEvery)
			}

			nc, err := net.DialTimeout("tcp", child.addr, 2*time.Second)
			require.NoError(t, err)
			conns = append(conns, nc)
			_, err = nc.Write(mustPacket(t, markAccess("")))
			require.NoError(t, err)
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			p, err := protocol.NewReader(nc, 0).ReadPacket()
			require.NoError(t, err, "a new user at the limit is served; server log:\n%s", child.stderr.String())
			assert.Equal(t, protocol.AccessOK, p.(*protocol.Access).Result)
			if kind == "held" {
				assert.Less(t, time.Since(start), 5*time.Second, "the holds (%v) ended early", DefaultViolationHold)
			}
		})
	}
}

// TestDisplaceForWebSocket: on a server with only a WebSocket listener,
// whose descriptors are all taken by WebSocket connections silent for a
// second, a new user of the WebSocket gets in: the listener makes room as
// the chat listener does (with a chat listener, whose accepts fail at the
// limit too, either would).
func TestDisplaceForWebSocket(t *testing.T) {
	const limit = 64
	t.Setenv("VOLANOGO_CHILD_WS", "only") // this test is not parallel: the child inherits it
	child := startChild(t, EngineGoroutine, limit)
	wsURL := "ws://" + child.announced(t, "WS") + "/chat"
	var conns []*websocket.Conn
	t.Cleanup(func() {
		for _, ws := range conns {
			ws.Close()
		}
	})
	// Fill the descriptors with upgraded connections that send nothing,
	// until an upgrade is not answered.
	quick := websocket.Dialer{HandshakeTimeout: 300 * time.Millisecond}
	for range limit {
		ws, _, err := quick.Dial(wsURL, nil)
		if err != nil {
			break
		}
		conns = append(conns, ws)
	}
	require.Less(t, len(conns), limit, "the server never ran out of descriptors")
	time.Sleep(displaceAge + 4*displaceEvery) // every silent one old enough (see above)

	d := websocket.Dialer{HandshakeTimeout: 3 * time.Second}
	ws, _, err := d.Dial(wsURL, nil)
	require.NoError(t, err, "the upgrade at the limit; server log:\n%s", child.stderr.String())
	defer ws.Close()
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, mustPacket(t, markAccess(""))))
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, msg, err := ws.ReadMessage()
	require.NoError(t, err)
	p, err := protocol.NewReader(bytes.NewReader(msg), 0).ReadPacket()
	require.NoError(t, err)
	assert.Equal(t, protocol.AccessOK, p.(*protocol.Access).Result)
}
