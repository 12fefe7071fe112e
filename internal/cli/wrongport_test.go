package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadAtAnHTTPServer: pointed at an HTTP server (a metrics port, a
// WebSocket endpoint) that answers its first packet with an HTTP reply,
// load fails saying so, not with the packet id that "HT" makes (18516).
func TestLoadAtAnHTTPServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// As an HTTP server answers a request it cannot parse.
			_, _ = c.Read(make([]byte, 512))
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = c.Close()
		}
	}()
	defer func() { _ = ln.Close(); <-done }()
	host, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"load", "-host", host, "-port", port, "-rooms", "1", "-users", "2",
		"-count", "1", "-file", "", "--quiet", "--stall-timeout", "10s"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, 1, code, errb.String())
	assert.Contains(t, strings.Join(strings.Fields(out.String()+errb.String()), " "), "this is an HTTP server", "folded at 80 columns")
}
