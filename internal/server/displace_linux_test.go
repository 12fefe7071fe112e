//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

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
				time.Sleep(time.Until(start.Add(displaceAge + displaceEvery)))
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
