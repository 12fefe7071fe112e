package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/loadtext"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// preflightTimeout bounds each of preflight's waits (a connect, a
// handshake, a probe's reply).
const preflightTimeout = 5 * time.Second

// preflight checks, before any run and only where load does not start the
// server itself, that the server answers as the run will expect: a port
// where nothing listens is said at once rather than after a run of
// refusals, and a ws:// URL must reach a WebSocket endpoint (a VOLANO chat
// port is named as one). It sends nothing on a plain TCP port.
func preflight(ctx context.Context, cfg campaign.Config) error {
	if cfg.Serve || cfg.ServerCmd != "" {
		return nil
	}
	timeout := min(preflightTimeout, max(cfg.Spec.StallTimeout, time.Second))
	if cfg.Transport == swarm.TransportWS {
		return preflightWS(ctx, cfg.URL, timeout)
	}
	host, port := cfg.Host, cfg.Port
	if host == "" {
		host = campaign.DefaultHost
	}
	if port == 0 {
		port = campaign.DefaultPort
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		if cfg.Transport != swarm.TransportTCP && errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("nothing listens at %s (connection refused): start the %s broker first, or let load start one for each run (--serve %s)",
				addr, cfg.Transport, strings.Join(broker.ServerNames(), "|"))
		}
		return dialFailed(addr, err)
	}
	return c.Close()
}

// dialFailed says why no connection to addr could be made, and what to do.
func dialFailed(addr string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("nothing listens at %s (connection refused): start the server first (volanogo serve), or let load start one for each run (--serve)", addr)
	}
	return fmt.Errorf("cannot reach the server at %s: %w", addr, err)
}

// preflightWS makes one WebSocket handshake with the URL the run will use.
func preflightWS(ctx context.Context, raw string, timeout time.Duration) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil // config refused it already, or the run will say
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "wss" {
			port = "443"
		}
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	d := &websocket.Dialer{NetDialContext: (&net.Dialer{Timeout: timeout}).DialContext, HandshakeTimeout: timeout}
	ws, resp, err := d.DialContext(ctx, raw, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	switch {
	case err == nil:
		return ws.Close()
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: %s: no WebSocket endpoint at the path %q (volanogo serve's is /chat: --url ws://%s/chat)",
			raw, resp.Status, u.Path, u.Host)
	case resp != nil:
		return fmt.Errorf("%s: the server answered the WebSocket handshake with %s", raw, resp.Status)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return dialFailed(addr, err)
	}
	// No HTTP reply at all: a VOLANO chat port closes a connection whose
	// first bytes ("GET ") are no packet. Ask it as Mark would.
	if u.Scheme == "ws" && speaksVolano(ctx, addr, timeout) {
		return fmt.Errorf("%s: this port speaks the VOLANO protocol (it answered an Access request), not WebSocket: drop ws:// (--url volano://%s, or -host %s -port %s)",
			raw, addr, u.Hostname(), port)
	}
	return fmt.Errorf("%s: no WebSocket handshake: %w", raw, err)
}

// speaksVolano reports whether the server at addr answers an Access
// request with an Access confirm, as a VOLANO chat server does.
func speaksVolano(ctx context.Context, addr string, timeout time.Duration) bool {
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	p := swarm.PlatformProps()
	pkt, err := (&protocol.Access{Type: protocol.Request, DefaultRoom: "volanogo-preflight", AppletVersion: results.MarkVersion,
		JavaVendor: p.Vendor, JavaVendorURL: p.VendorURL, JavaVersion: p.Version, JavaClassVersion: p.ClassVersion,
		OSName: p.OSName, OSVersion: p.OSVersion, OSArch: p.OSArch}).AppendPacket(nil)
	if err != nil {
		return false
	}
	if _, err := c.Write(pkt); err != nil {
		return false
	}
	f, err := protocol.NewReader(c, 0).Next()
	return err == nil && f.ID == protocol.IDAccess && f.Type == protocol.Confirm
}

// diagnoseHTTP names what answered in HTTP on the chat port of a run that
// no user got into: a WebSocket endpoint (one handshake at /chat, where
// volanogo serve has it, succeeds) or another HTTP server. "" when the run
// failed otherwise or load started the server.
func diagnoseHTTP(ctx context.Context, cfg campaign.Config, d *results.Document) string {
	if cfg.Serve || cfg.ServerCmd != "" || cfg.Transport != swarm.TransportTCP || !loadtext.NoneGotIn(d) {
		return ""
	}
	f, ok := d.FirstFailure()
	if !ok || f.Kind != results.FailProtocol || !strings.Contains(f.Example, "HTTP") {
		return ""
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	d2 := &websocket.Dialer{NetDialContext: (&net.Dialer{Timeout: preflightTimeout}).DialContext, HandshakeTimeout: preflightTimeout}
	ws, resp, err := d2.DialContext(ctx, "ws://"+addr+"/chat", nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Sprintf("%s is an HTTP server, not a chat port: volanogo serve's chat port is 8000 by default, its metrics port 8002", addr)
	}
	_ = ws.Close()
	return fmt.Sprintf("%s is a WebSocket endpoint (ws://%s/chat answered the handshake): use --url ws://%s/chat", addr, addr, addr)
}
