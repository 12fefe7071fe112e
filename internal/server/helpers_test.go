package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

var sampleRooms = []string{"Sample Permanent Room A", "Sample Permanent Room B", "Sample Permanent Room C"}

// startServer starts a server on a loopback port and stops it at the end
// of the test, checking that every connection was closed.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Engine == "" {
		cfg.Engine = EngineGoroutine
	}
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
		assert.Zero(t, s.counters.open.Load(), "connections still open after shutdown")
	})
	return s
}

// client is a test client speaking the protocol.
type client struct {
	t testing.TB
	c net.Conn
	r *protocol.Reader
}

func dial(t testing.TB, s *Server) *client {
	t.Helper()
	return dialAddr(t, s.Addr().String())
}

// aliceAndBob are two users in room, alice having read bob's EnterRoom
// indication.
func aliceAndBob(t testing.TB, s *Server, room string) (a, b *client) {
	t.Helper()
	a = dial(t, s)
	a.access(room)
	a.enter(room, "alice")
	b = dial(t, s)
	b.access(room)
	b.enter(room, "bob")
	a.expect()
	return a, b
}

func dialAddr(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, c: nc, r: protocol.NewReader(nc, 0)}
}

func (c *client) send(p protocol.Packet) {
	c.t.Helper()
	b, err := p.AppendPacket(nil)
	require.NoError(c.t, err)
	c.sendRaw(b)
}

func (c *client) sendRaw(b []byte) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.c.Write(b)
	require.NoError(c.t, err)
}

// next returns the next packet, or the read error.
func (c *client) next(d time.Duration) (protocol.Packet, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	return c.r.ReadPacket()
}

func (c *client) expect() protocol.Packet {
	c.t.Helper()
	p, err := c.next(5 * time.Second)
	require.NoError(c.t, err)
	return p
}

// expectClosed requires that the server closes the connection (EOF or
// reset) within five seconds, without sending anything first.
func (c *client) expectClosed() {
	c.t.Helper()
	p, err := c.next(5 * time.Second)
	require.Error(c.t, err, "expected close, got %#v", p)
	require.False(c.t, errors.Is(err, os.ErrDeadlineExceeded), "server did not close the connection")
}

// expectNothing requires that nothing arrives for d.
func (c *client) expectNothing(d time.Duration) {
	c.t.Helper()
	p, err := c.next(d)
	require.Error(c.t, err, "expected nothing, got %#v", p)
	require.True(c.t, errors.Is(err, os.ErrDeadlineExceeded), "expected silence, got %v", err)
	// A timed-out read may have consumed part of a packet; this client is
	// only used again after silence, so a fresh reader is safe.
	c.r = protocol.NewReader(c.c, 0)
}

func markAccess(room string) *protocol.Access {
	return &protocol.Access{Type: protocol.Request, DefaultRoom: room, AppletVersion: "2.13.4",
		DocumentBase: "http://www.volano.com/chat.html", CodeBase: "http://chat.volano.net/vcclient",
		JavaVendor: "volanogo", JavaVendorURL: "https://example.invalid", JavaVersion: "go",
		JavaClassVersion: "0", OSName: "Linux", OSVersion: "6", OSArch: "amd64"}
}

// access sends an Access naming room and requires OKAY.
func (c *client) access(room string) *protocol.Access {
	c.t.Helper()
	c.send(markAccess(room))
	a, ok := c.expect().(*protocol.Access)
	require.True(c.t, ok)
	require.Equal(c.t, protocol.AccessOK, a.Result)
	return a
}

func (c *client) enter(room, name string) *protocol.EnterRoom {
	c.t.Helper()
	c.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: room, UserName: name})
	e, ok := c.expect().(*protocol.EnterRoom)
	require.True(c.t, ok)
	return e
}

func chat(room, name, text string) *protocol.Chat {
	return &protocol.Chat{Type: protocol.Request, RoomName: room, UserName: name, Text: text}
}

// waitFor polls cond for up to five seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 5*time.Second, what, cond)
}

// waitWithin polls cond for up to d.
func waitWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var _ = io.EOF
