package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestMain doubles as a chat server for tests that spawn one (--serve,
// --server-cmd): with VOLANOGO_TEST_SERVE set, the test binary serves
// until SIGTERM and prints the ready line as `volanogo serve` does.
func TestMain(m *testing.M) {
	if os.Getenv("VOLANOGO_TEST_SERVE") != "" {
		os.Exit(helperServe(os.Args[1:]))
	}
	if os.Getenv("VOLANOGO_TEST_OPENFILES") != "" {
		os.Exit(helperOpenFiles())
	}
	os.Exit(m.Run())
}

func helperServe(args []string) int {
	if v := os.Getenv("VOLANOGO_TEST_NOFILE"); v != "" {
		if err := setOpenFilesLimit(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cfg := server.Config{Listen: "127.0.0.1:0"}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			cfg.Listen = args[i+1]
		case "--metrics-listen":
			cfg.MetricsListen = args[i+1]
		case "--ws-listen":
			cfg.WSListen = args[i+1]
		}
	}
	s, err := server.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	addr := func(a net.Addr, on bool) string {
		if !on || a == nil {
			return ""
		}
		return a.String()
	}
	fmt.Println(handshake.Serve{Chat: addr(s.Addr(), true), WS: addr(s.WSAddr(), cfg.WSListen != ""), Metrics: addr(s.MetricsAddr(), cfg.MetricsListen != "")}.Line())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(sctx)
	return 0
}

// helperServeArgv is a ServeCommand that runs this test binary as a server.
func helperServeArgv(t *testing.T) []string {
	t.Setenv("VOLANOGO_TEST_SERVE", "1")
	return []string{os.Args[0], "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}
}

func startServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := server.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
	})
	return s
}

func splitAddr(t testing.TB, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}

func splitHostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return h, port, err
}

func tcpConfig(t testing.TB, addr string) Config {
	host, port := splitAddr(t, addr)
	// volanogo serve keeps each room's order: the project's own tests hold
	// it to that.
	return Config{Host: host, Port: port, StallTimeout: 5 * time.Second, StrictOrder: true}
}

// checkGoroutines fails the test if goroutines started during it are
// still running at its end.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// proxy sits between the client and a real server. filter sees every
// packet the server sends to connection conn (0-based, in accept order)
// and returns the bytes to forward (nil drops it); closeAll closes every
// connection.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	filter func(conn int, f protocol.Frame) [][]byte

	mu    sync.Mutex
	conns []net.Conn
	n     int
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, target string, filter func(conn int, f protocol.Frame) [][]byte) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{t: t, ln: ln, target: target, filter: filter}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		idx := p.n
		p.n++
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(s, c)
			s.Close()
		}()
		go func() {
			defer p.wg.Done()
			defer c.Close()
			rd := protocol.NewReader(s, 0)
			for {
				f, err := rd.Next()
				if err != nil {
					return
				}
				for _, b := range p.filter(idx, f) {
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			}
		}()
	}
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func isChatIndication(f protocol.Frame) bool {
	return f.ID == protocol.IDChat && f.Type == protocol.Indication
}

func copyRaw(f protocol.Frame) []byte { return append([]byte(nil), f.Raw...) }

// failureKinds lists the kinds of a document's failures.
func failureKinds(d *results.Document) []string {
	var k []string
	for _, f := range d.Failures {
		k = append(k, f.Kind)
	}
	return k
}

func failure(d *results.Document, kind string) *results.Failure {
	for i := range d.Failures {
		if d.Failures[i].Kind == kind {
			return &d.Failures[i]
		}
	}
	return nil
}

// runExpectFailure runs cfg, requires ErrFailed and a written document,
// and returns the document read back.
func runExpectFailure(t *testing.T, cfg Config) (*results.Document, string) {
	t.Helper()
	cfg.Output = t.TempDir() + "/run.json"
	cfg.File = ""
	var out strings.Builder
	_, err := Run(context.Background(), cfg, &out)
	require.True(t, errors.Is(err, ErrFailed), "err = %v, out:\n%s", err, out.String())
	d, rerr := results.ReadFile(cfg.Output)
	require.NoError(t, rerr)
	assert.False(t, d.Passed)
	assert.Contains(t, out.String(), "Test failed.")
	return d, out.String()
}
