package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailureSet(t *testing.T) {
	var s FailureSet
	assert.Nil(t, s.List())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add(FailStall, "room 3 stalled", t0.Add(5*time.Second))
	s.Add(FailRefused, "refused 1", t0.Add(2*time.Second))
	s.Add(FailStall, "room 1 stalled earlier", t0.Add(time.Second)) // earlier: becomes the example
	s.Add(FailStall, "room 9 stalled later", t0.Add(9*time.Second))
	s.Add(FailRefused, "refused 2 (no time)", time.Time{})
	s.Add("", "unnamed", t0)
	s.AddN(FailReset, "reset", t0, 5)
	s.AddN(FailReset, "ignored", t0, 0)
	s.AddError(nil, t0)
	s.AddError(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, t0.Add(time.Hour))
	assert.Equal(t, []Failure{
		{Kind: FailStall, Count: 3, Example: "room 1 stalled earlier", At: t0.Add(time.Second)},
		{Kind: FailRefused, Count: 3, Example: "refused 1", At: t0.Add(2 * time.Second)},
		{Kind: FailOther, Count: 1, Example: "unnamed", At: t0},
		{Kind: FailReset, Count: 5, Example: "reset", At: t0},
	}, s.List())
	assert.Equal(t, 4, s.Len())
	assert.Equal(t, int64(12), s.Total())
}

func TestFailureSetBounded(t *testing.T) {
	var s FailureSet
	for i := 0; i < MaxFailureKinds+10; i++ {
		s.Add(fmt.Sprintf("kind%d", i), "example", time.Time{})
	}
	list := s.List()
	require.Len(t, list, MaxFailureKinds+1) // the overflow goes to "other"
	last := list[len(list)-1]
	assert.Equal(t, FailOther, last.Kind)
	assert.Equal(t, int64(10), last.Count)
	assert.Equal(t, fmt.Sprintf("kind%d: example", MaxFailureKinds), last.Example)

	var s2 FailureSet
	long := strings.Repeat("é", MaxExampleBytes)
	s2.Add(FailProtocol, long, time.Time{})
	ex := s2.List()[0].Example
	assert.LessOrEqual(t, len(ex), MaxExampleBytes)
	assert.True(t, strings.HasSuffix(ex, "..."))
	assert.True(t, strings.HasPrefix(ex, "éé"))
	assert.NotContains(t, ex, "\uFFFD")
}

func TestFailureSetConcurrent(t *testing.T) {
	var s FailureSet
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				s.Add([]string{FailTimeout, FailReset, FailClosed}[i%3], fmt.Sprint(g, i), t0.Add(time.Duration(g*100+i)))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(10000), s.Total())
	for _, f := range s.List() {
		switch f.Kind {
		case FailTimeout:
			assert.Equal(t, "0 0", f.Example)
		case FailReset:
			assert.Equal(t, "0 1", f.Example)
		case FailClosed:
			assert.Equal(t, "0 2", f.Example)
		}
	}
}

func TestClassify(t *testing.T) {
	// A closed loopback port: a real ECONNREFUSED.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, refused := net.DialTimeout("tcp", addr, 5*time.Second)
	require.Error(t, refused)

	// A real deadline, a real EOF and a real use of a closed connection.
	c, srv := tcpPair(t)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
	_, deadline := c.Read(make([]byte, 1))
	require.NoError(t, srv.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, eof := c.Read(make([]byte, 1))
	require.NoError(t, c.Close())
	_, closed := c.Read(make([]byte, 1))

	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	var d net.Dialer
	_, ctxErr := d.DialContext(ctx, "tcp", addr)
	require.Error(t, ctxErr)

	sys := func(call string, errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError(call, errno)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"refused (real)", refused, FailRefused},
		{"refused wrapped", fmt.Errorf("room 3 user 2: %w", sys("connect", syscall.ECONNREFUSED)), FailRefused},
		{"EMFILE", sys("socket", syscall.EMFILE), FailOpenFiles},
		{"ENFILE", fmt.Errorf("accept: %w", syscall.ENFILE), FailOpenFiles},
		{"EADDRNOTAVAIL", sys("connect", syscall.EADDRNOTAVAIL), FailNoSourcePort},
		{"ECONNRESET", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, FailReset},
		{"EPIPE", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, FailReset},
		{"ECONNABORTED", syscall.ECONNABORTED, FailReset},
		{"deadline (real)", deadline, FailTimeout},
		{"os.ErrDeadlineExceeded", fmt.Errorf("wait: %w", os.ErrDeadlineExceeded), FailTimeout},
		{"context deadline", fmt.Errorf("phase: %w", context.DeadlineExceeded), FailTimeout},
		{"dial with expired context (real)", ctxErr, FailTimeout},
		{"ETIMEDOUT", sys("connect", syscall.ETIMEDOUT), FailTimeout},
		{"net.Error timeout", timeoutErr{}, FailTimeout},
		{"EOF (real)", eof, FailClosed},
		{"unexpected EOF", fmt.Errorf("packet: %w", io.ErrUnexpectedEOF), FailClosed},
		{"closed (real)", closed, FailClosed},
		{"closed pipe", io.ErrClosedPipe, FailClosed},
		{"other", errors.New("something else"), FailOther},
		{"context canceled", context.Canceled, FailOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classify(tc.err), "%v", tc.err)
		})
	}
}

// tcpPair is a connected loopback pair (client, server), closed at cleanup.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	s, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return c, s
}

func TestClassifyReset(t *testing.T) {
	// A real reset: the server closes with SO_LINGER 0.
	c, s := tcpPair(t)
	require.NoError(t, s.(*net.TCPConn).SetLinger(0))
	require.NoError(t, s.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	assert.Equal(t, FailReset, Classify(err), "%v", err)
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestDescribe(t *testing.T) {
	assert.Equal(t, "too many open files", Describe(FailOpenFiles))
	assert.Equal(t, "connection refused", Describe(FailRefused))
	for _, k := range []string{FailRefused, FailOpenFiles, FailNoSourcePort, FailTimeout, FailReset,
		FailClosed, FailProtocol, FailServerError, FailDenied, FailStall, FailIntegrity,
		FailServerStart, FailShard, FailOther} {
		assert.NotEqual(t, k, Describe(k), "every kind has a phrase")
	}
	assert.Equal(t, "weird_kind", Describe("weird_kind"))
}
