package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// version is the applet version the servers accept by default.
const version = "2.13.4"

// accessPacket is a well-formed Access request naming room as its default
// room (the server creates it, if dynamic rooms are on).
func accessPacket(room string) []byte {
	return mustPacket(&protocol.Access{Type: protocol.Request, DefaultRoom: room, AppletVersion: version,
		DocumentBase: "http://torture.invalid/", CodeBase: "http://torture.invalid/",
		JavaVendor: "volanogo", JavaVendorURL: "https://torture.invalid/", JavaVersion: "1.1",
		JavaClassVersion: "45.3", OSName: "torture", OSVersion: "1", OSArch: "none"})
}

func enterPacket(room, user string) []byte {
	return mustPacket(&protocol.EnterRoom{Type: protocol.Request, Profile: "torture", RoomName: room, UserName: user})
}

func chatPacket(room, user, text string) []byte {
	return mustPacket(&protocol.Chat{Type: protocol.Request, RoomName: room, UserName: user, Text: text})
}

func mustPacket(p protocol.Packet) []byte {
	b, err := p.AppendPacket(nil)
	if err != nil {
		panic(fmt.Sprintf("torture: building %T: %v", p, err)) // the suite's own packets are valid
	}
	return b
}

// client is one chat connection speaking the protocol.
type client struct {
	nc net.Conn
	rd *protocol.Reader
}

func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", addr)
}

func dialClient(ctx context.Context, addr string) (*client, error) {
	nc, err := dialTCP(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &client{nc: nc, rd: protocol.NewReader(nc, 1<<20)}, nil
}

func (c *client) close() { _ = c.nc.Close() }

func (c *client) send(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(b)
	return err
}

// expect reads until a packet with id and type t arrives (others are
// skipped) or timeout passes.
func (c *client) expect(id protocol.ID, t protocol.Type, timeout time.Duration) (protocol.Frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	for {
		f, err := c.rd.Next()
		if err != nil {
			return f, err
		}
		if f.ID == id && f.Type == t {
			return f, nil
		}
	}
}

// access sends an Access request for room and waits for its confirm.
func (c *client) access(room string, timeout time.Duration) error {
	if err := c.send(accessPacket(room)); err != nil {
		return err
	}
	f, err := c.expect(protocol.IDAccess, protocol.Confirm, timeout)
	if err != nil {
		return fmt.Errorf("access confirm: %w", err)
	}
	p, err := f.Decode()
	if err != nil {
		return err
	}
	if r := p.(*protocol.Access).Result; r != protocol.AccessOK {
		return fmt.Errorf("access refused: result %d", r)
	}
	return nil
}

// join is Access then EnterRoom into room as user.
func (c *client) join(room, user string, timeout time.Duration) error {
	if err := c.access(room, timeout); err != nil {
		return err
	}
	if err := c.send(enterPacket(room, user)); err != nil {
		return err
	}
	f, err := c.expect(protocol.IDEnterRoom, protocol.Confirm, timeout)
	if err != nil {
		return fmt.Errorf("enter confirm: %w", err)
	}
	p, err := f.Decode()
	if err != nil {
		return err
	}
	if r := p.(*protocol.EnterRoom).Result; r != protocol.EnterOK {
		return fmt.Errorf("enter refused: result %d", r)
	}
	return nil
}

// closedByPeer reads and discards what nc has until the peer closes it
// (true) or wait passes (false).
func closedByPeer(nc net.Conn, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	_ = nc.SetReadDeadline(deadline)
	buf := make([]byte, 64<<10)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		return true // EOF, reset: the server closed it
	}
}

// isClosedErr tells a closed or reset connection from a timeout.
func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// WebSocket, by hand: the attacks need frames no library would send.

// wsConn is a WebSocket connection after a handshake made by hand.
type wsConn struct {
	nc     net.Conn
	br     *bufio.Reader
	status int
}

// wsDial connects to u (ws://host:port/path) and sends the upgrade request
// with origin ("" for none). It returns the connection with the response
// status read (101 on success).
func wsDial(ctx context.Context, u, origin string) (*wsConn, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	nc, err := dialTCP(ctx, pu.Host)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n", pu.RequestURI(), pu.Host)
	fmt.Fprintf(&req, "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n", base64.StdEncoding.EncodeToString(key))
	if origin != "" {
		fmt.Fprintf(&req, "Origin: %s\r\n", origin)
	}
	req.WriteString("\r\n")
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte(req.String())); err != nil {
		nc.Close()
		return nil, err
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
	}
	_ = nc.SetDeadline(time.Time{})
	return &wsConn{nc: nc, br: br, status: resp.StatusCode}, nil
}

func (w *wsConn) close() { _ = w.nc.Close() }

// Opcodes.
const (
	opText   = 1
	opBinary = 2
	opClose  = 8
	opPing   = 9
)

// wsFrame builds one final frame; masked as a client must, unless not.
// claim, when not 0, is the payload length written in the header
// (whatever the payload really is).
func wsFrame(op byte, payload []byte, masked bool, claim uint64) []byte {
	n := uint64(len(payload))
	if claim != 0 {
		n = claim
	}
	b := []byte{0x80 | op}
	var maskBit byte
	if masked {
		maskBit = 0x80
	}
	switch {
	case n < 126:
		b = append(b, maskBit|byte(n))
	case n <= 0xffff:
		b = append(b, maskBit|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, maskBit|127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	if !masked {
		return append(b, payload...)
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

func (w *wsConn) write(b []byte) error {
	_ = w.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := w.nc.Write(b)
	return err
}

// readPacket reads frames until a binary message (returned whole: the
// server sends one packet per unfragmented message) or timeout.
func (w *wsConn) readPacket(timeout time.Duration) ([]byte, error) {
	_ = w.nc.SetReadDeadline(time.Now().Add(timeout))
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var x [2]byte
			if _, err := io.ReadFull(w.br, x[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(x[:]))
		case 127:
			var x [8]byte
			if _, err := io.ReadFull(w.br, x[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(x[:])
		}
		if n > 1<<20 {
			return nil, errors.New("websocket frame too large")
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.br, p); err != nil {
			return nil, err
		}
		switch h[0] & 0x0f {
		case opBinary:
			return p, nil
		case opClose:
			return nil, io.EOF
		}
	}
}

// rssOf reads a process's resident set from /proc (0 if it cannot).
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
