// Package brokertest starts the real brokers (nats-server, redis-server,
// mosquitto) for tests, each on a free loopback port, stopped at the end
// of the test. A test whose broker is not installed is skipped with the
// name of its Debian package, unless VOLANOGO_REQUIRE_SERVERS=1 (CI,
// which installs them) makes that a failure.
package brokertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volanogo/volanogo/internal/broker"
)

// RequireEnv is the variable that makes a missing broker a failure.
const RequireEnv = "VOLANOGO_REQUIRE_SERVERS"

// Server is a broker a test started.
type Server struct {
	broker.Server
	// Addr is its host:port on loopback.
	Addr string
	t    testing.TB
	argv []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *strings.Builder
}

// Option changes how a broker is started.
type Option func(*options)

type options struct{ conf []string }

// Conf adds lines to a configuration file the broker is started with
// (mosquitto's has a listener on the port and anonymous access already).
func Conf(lines ...string) Option {
	return func(o *options) { o.conf = append(o.conf, lines...) }
}

// Start starts the broker program name on a free loopback port and waits
// until it accepts connections.
func Start(t testing.TB, name string, opts ...Option) *Server {
	t.Helper()
	spec, ok := broker.LookupServer(name)
	if !ok {
		t.Fatalf("brokertest: no broker %q", name)
	}
	path, err := spec.Path()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%v, and %s=1", err, RequireEnv)
		}
		t.Skipf("%v", err)
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	port := freePort(t)
	s := &Server{Server: spec, t: t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	p := strconv.Itoa(port)
	conf := func(lines []string) string {
		f := filepath.Join(t.TempDir(), name+".conf")
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	switch name {
	case "nats-server":
		s.argv = []string{path, "-a", "127.0.0.1", "-p", p}
		if len(o.conf) > 0 {
			s.argv = append(s.argv, "-c", conf(o.conf))
		}
	case "redis-server":
		s.argv = []string{path, "--bind", "127.0.0.1", "--port", p, "--save", "", "--appendonly", "no"}
		if len(o.conf) > 0 {
			s.argv = append([]string{path, conf(o.conf)}, s.argv[1:]...)
		}
	case "mosquitto":
		s.argv = []string{path, "-c", conf(append([]string{"listener " + p + " 127.0.0.1", "allow_anonymous true"}, o.conf...))}
	}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Server) start() error {
	s.mu.Lock()
	s.log = &strings.Builder{}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: s.log, mu: &s.mu}, &lockedWriter{b: s.log, mu: &s.mu}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before it listened on %s: %s", s.Name, s.Addr, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("%s not listening on %s after 15s: %s", s.Name, s.Addr, s.Log())
		}
	}
}

// Log is what the broker printed.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Pid is the broker's process id.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Kill ends the broker at once (SIGKILL) and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	_ = cmd.Process.Kill()
	<-done
}

// Restart kills the broker and starts it again on the same port; it may
// be called from any goroutine.
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

// Stop ends the broker (SIGTERM, SIGKILL after 5 s) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Version is the broker's version, as the program prints it.
func (s *Server) Version() string {
	v, err := s.Server.Version(context.Background())
	if err != nil {
		s.t.Fatalf("%s version: %v", s.Name, err)
	}
	return v
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 1<<16 {
		return len(p), nil
	}
	return w.b.Write(p)
}

// ErrMissing reports whether err says a broker is not installed.
func ErrMissing(err error) bool {
	var me *broker.MissingError
	return errors.As(err, &me)
}
