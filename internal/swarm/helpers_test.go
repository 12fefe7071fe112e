package swarm

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/testutil"
	"github.com/volanogo/volanogo/pkg/protocol"
)

func startServer(t testing.TB, cfg server.Config) *server.Server { return testutil.StartServer(t, cfg) }

// testConfig is one run in a test: the spec and target, with Rooms as a
// count (Room1...).
type testConfig struct {
	Spec
	Target
	Rooms int
}

func (c testConfig) spec() Spec {
	s := c.Spec
	s.Rooms = nil
	for i := 1; i <= c.Rooms; i++ {
		s.Rooms = append(s.Rooms, i)
	}
	return s
}

// testEngine is the client engine of the turn-taking and paced runs of
// the tests (TestEngineEpoll runs them again on the epoll engine).
var testEngine = EngineGoroutine

func tcpConfig(addr string) testConfig {
	// volanogo serve keeps each room's order: the project's own tests hold
	// it to that.
	return testConfig{Spec: Spec{StallTimeout: 5 * time.Second, StrictOrder: true},
		Target: Target{Transport: TransportTCP, Addr: addr}}
}

// observer records the phases it sees and starts at once (or at start).
type observer struct {
	mu     sync.Mutex
	phases []Phase
	snaps  []Snapshot
	start  time.Time
	err    error
}

func (o *observer) Phase(ph Phase, p Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.phases = append(o.phases, ph)
	o.snaps = append(o.snaps, p.Snapshot())
}

func (o *observer) Start(context.Context) (time.Time, error) { return o.start, o.err }

func (o *observer) seen() []Phase {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Phase(nil), o.phases...)
}

// run runs cfg and returns its document (the run may have failed).
func run(t *testing.T, cfg testConfig) *results.Document {
	t.Helper()
	return runWith(t, context.Background(), cfg, &observer{})
}

func runWith(t *testing.T, ctx context.Context, cfg testConfig, obs Observer) *results.Document {
	t.Helper()
	loops := cfg.Scenario == "" || cfg.Scenario == results.ScenarioTurns || cfg.Scenario == results.ScenarioPaced
	if cfg.Engine == "" && loops && cfg.Transport != TransportWS {
		cfg.Engine = testEngine
	}
	d, err := Run(ctx, cfg.spec(), cfg.Target, obs)
	require.NoError(t, err)
	require.NotNil(t, d)
	return d
}

// mustPass runs cfg and requires that the run passed.
func mustPass(t *testing.T, cfg testConfig) *results.Document {
	t.Helper()
	d := run(t, cfg)
	require.True(t, d.Passed, "%+v", d.Failures)
	return d
}

// runExpectFailure runs cfg and requires that the run failed.
func runExpectFailure(t *testing.T, cfg testConfig) *results.Document {
	t.Helper()
	d := run(t, cfg)
	require.False(t, d.Passed, "the run passed")
	return d
}

func checkGoroutines(t *testing.T) { testutil.CheckGoroutines(t) }

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
