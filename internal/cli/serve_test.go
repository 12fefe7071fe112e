package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/pkg/protocol"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeStartsAndStops(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.txt")
	require.NoError(t, os.WriteFile(rooms, []byte("# permanent rooms\nLobby\n\n  Games  \n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
			"--rooms-file", rooms, "--room", "Extra", "--log-level", "debug"}, nil, &out, &errb)
	}()
	var chatAddr string
	require.Eventually(t, func() bool {
		hs, ok := handshake.ParseServe(out.String())
		if !ok {
			return false
		}
		chatAddr = hs.Chat
		return true
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "metrics=127.0.0.1:")
	assert.Contains(t, out.String(), "ws= ")
	nc, err := net.Dial("tcp", chatAddr)
	require.NoError(t, err)
	defer nc.Close()
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of the signal")
	}
	assert.Contains(t, errb.String(), "rooms=3")
	assert.Contains(t, errb.String(), "draining")
	// the open connection was closed by the server, cleanly (a FIN, not a
	// reset)
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
}

// TestServeEngineAuto: --engine auto starts, logs which engine it took
// and why, and the started line names that engine.
func TestServeEngineAuto(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "-listen", "127.0.0.1:0", "--metrics-listen", "", "--engine", "auto"}, nil, &out, &errb)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "volanogo serve started") }, 5*time.Second, 10*time.Millisecond)
	assert.Regexp(t, `msg="engine auto: (uring|epoll|goroutine)" why=`, errb.String())
	assert.Regexp(t, `volanogo serve started.* engine=(uring|epoll|goroutine) `, errb.String())
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of the signal")
	}
}

func TestServeBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"serve", "--room-limit", "0"}, 2, "--room-limit must be positive"},
		{[]string{"serve", "--room-limit", "many"}, 2, "invalid argument"},
		{[]string{"serve", "--idle-timeout", "5"}, 2, "missing unit"},
		{[]string{"serve", "--access-timeout=-1s"}, 2, "--access-timeout must not be negative"},
		{[]string{"serve", "--max-private=-1"}, 2, "--max-private must not be negative"},
		{[]string{"serve", "--max-rooms=-5"}, 2, "--max-rooms must not be negative"},
		{[]string{"serve", "--request-rate=-5"}, 2, "--request-rate must not be negative"},
		{[]string{"serve", "--room-list-max", "0"}, 2, "--room-list-max must be positive"},
		{[]string{"serve", "--drain-timeout", "0s"}, 2, "--drain-timeout must be positive"},
		{[]string{"serve", "--bogus"}, 2, "--bogus: illegal argument"},
		{[]string{"serve", "extra"}, 2, "unknown command"},
		{[]string{"serve", "--rooms-file", "/nonexistent/rooms.txt"}, 1, "/nonexistent/rooms.txt"},
		{[]string{"serve", "--room", "A", "--room", "A", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, 2, `"A" is given twice`},
		{[]string{"serve", "--listen", "", "--metrics-listen", ""}, 2, "nothing to serve"},
		{[]string{"serve", "--engine", "kqueue"}, 2, `--engine must be goroutine, epoll, uring or auto (got "kqueue")`},
		{[]string{"serve", "--coalesce", "1ms"}, 2, "--coalesce applies to the epoll engine only (engine goroutine) (got 1ms)"},
		{[]string{"serve", "--engine", "epoll", "--coalesce", "11ms"}, 2, "--coalesce must be between 0 and 10ms (got 11ms)"},
		{[]string{"serve", "--engine", "epoll", "--coalesce=-1ms"}, 2, "--coalesce must not be negative (got -1ms)"},
		{[]string{"serve", "--max-private=-1", "--max-rooms", "0"}, 2, "--max-private must not be negative (got -1)"},
		{[]string{"serve", "--max-name", "0"}, 2, "--max-name must be positive (got 0)"},
		{[]string{"serve", "--handshake-timeout", "0s"}, 2, "--handshake-timeout must be positive (got 0)"},
		{[]string{"serve", "--engine", "epoll", "--loops=-1"}, 2, "--loops must not be negative (got -1)"},
		{[]string{"serve", "--engine", "uring", "--loop-fill=-1"}, 2, "--loop-fill must not be negative (got -1)"},
	} {
		code, _, errOut := run(t, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}

// startServeProcess runs `volanogo serve` as a process (this test binary,
// see TestMain) and returns it with its chat address.
func startServeProcess(t *testing.T, args ...string) (*exec.Cmd, string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, args...)...)
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errb lockedBuffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		hs, ok := handshake.ParseServe(l)
		require.True(t, ok, l)
		return cmd, hs.Chat, &errb
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not start: %s", errb.String())
	}
	return nil, "", nil
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		return cmd.ProcessState
	case <-time.After(within):
		t.Fatalf("serve did not exit within %v", within)
	}
	return nil
}

// TestServeSIGTERMDrains: SIGTERM to a serving process under load stops
// it accepting, every user reads its chats to the end and then a clean
// close, and it exits 0; a second signal ends it at once.
func TestServeSIGTERMDrains(t *testing.T) {
	cmd, addr, errb := startServeProcess(t)
	const users = 10
	var conns []net.Conn
	var readers []*protocol.Reader
	for i := range users {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		defer nc.Close()
		conns = append(conns, nc)
		b, err := (&protocol.Access{Type: protocol.Request, DefaultRoom: "Drain", AppletVersion: "2.13.4",
			DocumentBase: "http://www.volano.com/chat.html"}).AppendPacket(nil)
		require.NoError(t, err)
		b, err = (&protocol.EnterRoom{Type: protocol.Request, RoomName: "Drain", UserName: "u" + strconv.Itoa(i), Profile: "p"}).AppendPacket(b)
		require.NoError(t, err)
		_, err = nc.Write(b)
		require.NoError(t, err)
		// In the room before the signal: a connection still in the
		// listener's backlog when the server stops accepting is reset by
		// the kernel, not drained.
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := protocol.NewReader(nc, 0)
		readers = append(readers, r)
		for {
			p, err := r.ReadPacket()
			require.NoError(t, err, "user %d enters", i)
			if e, ok := p.(*protocol.EnterRoom); ok && e.Type == protocol.Confirm {
				break
			}
		}
	}
	// the last user chats; the chats are on their way when the signal comes
	var chats []byte
	for i := range 200 {
		b, err := (&protocol.Chat{Type: protocol.Request, RoomName: "Drain", UserName: "u9", Text: "m" + strconv.Itoa(i)}).AppendPacket(nil)
		require.NoError(t, err)
		chats = append(chats, b...)
	}
	_, err := conns[users-1].Write(chats)
	require.NoError(t, err)
	// every user reads until the server closes: a FIN after its packets
	got := make(chan int, users)
	for i, nc := range conns {
		go func(nc net.Conn, r *protocol.Reader) {
			_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			n := 0
			for {
				p, err := r.ReadPacket()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						n = -1
					}
					got <- n
					return
				}
				if c, ok := p.(*protocol.Chat); ok && c.Type == protocol.Indication {
					n++
				}
			}
		}(nc, readers[i])
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	st := waitExit(t, cmd, 15*time.Second)
	assert.Equal(t, 0, st.ExitCode(), errb.String())
	for range users {
		n := <-got
		assert.GreaterOrEqual(t, n, 0, "a clean close (EOF), not a reset")
	}
	assert.Contains(t, errb.String(), "draining")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "not accepting")

	// a second signal during a drain ends the process at once: a client
	// that never closes keeps the drain waiting (for its one-second
	// linger; the drain timeout is longer)
	cmd2, addr2, errb2 := startServeProcess(t, "--drain-timeout", "30s")
	nc, err := net.DialTimeout("tcp", addr2, 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	b, err := (&protocol.Access{Type: protocol.Request, AppletVersion: "2.13.4", DocumentBase: "http://x.example/"}).AppendPacket(nil)
	require.NoError(t, err)
	_, err = nc.Write(b)
	require.NoError(t, err)
	_, err = protocol.NewReader(nc, 0).ReadPacket()
	require.NoError(t, err)
	require.NoError(t, cmd2.Process.Signal(syscall.SIGTERM))
	// The "draining" line says the first signal was taken. The default
	// action comes back on another goroutine of the process, so a signal
	// sent just after the line may still be swallowed: signal again until
	// the process ends, which a signal does at once once the default is
	// back, long before the linger is over.
	require.Eventually(t, func() bool { return strings.Contains(errb2.String(), "draining") }, 10*time.Second, 5*time.Millisecond,
		"the first signal starts the drain: %s", errb2.String())
	exited := make(chan struct{})
	go func() {
		_ = cmd2.Wait()
		close(exited)
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		_ = cmd2.Process.Signal(syscall.SIGTERM) // fails only once the process is gone
		select {
		case <-exited:
			done = true
		case <-tick.C:
		case <-deadline:
			require.FailNow(t, "serve did not exit after the second signal", errb2.String())
		}
	}
	st2 := cmd2.ProcessState
	ws, ok := st2.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, ws.Signaled(), "ended by the second signal, not by the drain's end: %v\n%s", st2, errb2.String())
}
