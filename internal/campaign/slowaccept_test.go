package campaign

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/server"
)

// slowAccept is a TCP proxy in front of addr that accepts a connection
// every interval: a server that "accepts connections at a slow rate".
func slowAccept(t *testing.T, addr string, interval time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-done:
				return
			}
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(s)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); _ = s.(*net.TCPConn).CloseWrite() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, s); _ = c.(*net.TCPConn).CloseWrite() }()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestSlowAcceptBreaksStep: a paced step whose server accepts 50
// connections a second, where 400 a second were asked, breaks with that
// cause, as the vendor's CCU test broke "beyond this the server accepts
// connections at a slow rate".
func TestSlowAcceptBreaksStep(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	proxy := slowAccept(t, s.Addr().String(), 20*time.Millisecond)
	cfg := tcpConfig(t, proxy)
	cfg.Steps = []int{10}
	cfg.Spec.Users, cfg.Spec.Pause, cfg.Spec.Duration = 2, 100*time.Millisecond, time.Second
	cfg.Spec.ConnectRate = 400
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed, rec.out())
	d := rec.docs[0]
	require.True(t, d.Passed, "nothing failed: %+v", d.Failures)
	require.NotNil(t, d.Paced)
	assert.True(t, d.Paced.Broken)
	assert.Contains(t, d.Paced.Reason, "under 90% of the 400 asked (--connect-rate)")
	assert.Less(t, d.Connections.ConnectRate, 0.9*400, strconv.FormatFloat(d.Connections.ConnectRate, 'f', 1, 64))
}
