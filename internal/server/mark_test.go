package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// markText is VolanoMark's fixed message, trailing space included.
const markText = "123456789 123456789 123456789 123456789 123456789 123456789 "

// markResult is what a Mark-like run counted.
type markResult struct {
	sent, received int64
	integrity      int64 // messages from the wrong sender for their turn
	elapsed        time.Duration
}

// runMark is a small VolanoMark driver for the server's own tests and
// benchmarks (volanogo load is the real one): rooms × users connect (rooms
// in parallel, users of a room in order), then each room takes turns
// exactly as Mark does, and every receiver checks that message k of its
// room comes from the user whose turn k was.
func runMark(ctx context.Context, addr string, rooms, users, count int) (markResult, error) {
	var res markResult
	var sent, received, integrity atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, rooms*users)
	var conns []net.Conn
	var connsMu sync.Mutex
	defer func() {
		connsMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connsMu.Unlock()
	}()

	names := make([][]byte, users+1)
	for j := 1; j <= users; j++ {
		names[j] = []byte("Mark" + strconv.Itoa(j))
	}
	setup := make(chan error, rooms)
	for r := 1; r <= rooms; r++ {
		go func(r int) {
			room := "Room" + strconv.Itoa(r)
			for j := 1; j <= users; j++ {
				d := net.Dialer{Timeout: 5 * time.Second}
				nc, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					setup <- err
					return
				}
				connsMu.Lock()
				conns = append(conns, nc)
				connsMu.Unlock()
				rd := protocol.NewReader(nc, 0)
				_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
				b, _ := markAccess(room).AppendPacket(nil)
				b, _ = (&protocol.EnterRoom{Type: protocol.Request, Profile: "This is the profile for Mark" + strconv.Itoa(j) + " in " + room + ".",
					RoomName: room, UserName: "Mark" + strconv.Itoa(j)}).AppendPacket(b)
				if _, err := nc.Write(b); err != nil {
					setup <- err
					return
				}
				for got := 0; got < 2; {
					f, err := rd.Next()
					if err != nil {
						setup <- fmt.Errorf("%s Mark%d set-up: %w", room, j, err)
						return
					}
					if f.ID == protocol.IDAccess || f.ID == protocol.IDEnterRoom && f.Type == protocol.Confirm {
						got++
					}
				}
				// one deadline for the whole run: a stalled room fails the
				// run rather than hang it, and no timer per read
				_ = nc.SetDeadline(time.Now().Add(5 * time.Minute))
				if dl, ok := ctx.Deadline(); ok {
					_ = nc.SetDeadline(dl)
				}
				u := &markUser{room: room, num: j, users: users, count: count, nc: nc, rd: rd, names: names,
					sent: &sent, received: &received, integrity: &integrity}
				u.chat, _ = chat(room, "Mark"+strconv.Itoa(j), markText).AppendPacket(nil)
				u.exit, _ = (&protocol.ExitRoom{Type: protocol.Request, RoomName: room, UserName: "Mark" + strconv.Itoa(j)}).AppendPacket(nil)
				u.exit, _ = (&protocol.RoomList{Type: protocol.Request}).AppendPacket(u.exit)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := u.run(start); err != nil {
						errs <- err
					}
				}()
			}
			setup <- nil
		}(r)
	}
	for range rooms {
		if err := <-setup; err != nil {
			close(start)
			return res, err
		}
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	res.elapsed = time.Since(t0)
	res.sent, res.received, res.integrity = sent.Load(), received.Load(), integrity.Load()
	close(errs)
	return res, <-errs
}

type markUser struct {
	room                       string
	num, users, count          int
	nc                         net.Conn
	rd                         *protocol.Reader
	names                      [][]byte
	chat, exit                 []byte
	sent, received, integrity  *atomic.Int64
	mySent, myReceived, exited int
}

func (u *markUser) run(start chan struct{}) error {
	defer u.nc.Close()
	if u.num == 1 {
		<-start
		if err := u.send(); err != nil {
			return err
		}
	}
	defer func() {
		u.sent.Add(int64(u.mySent))
		u.received.Add(int64(u.myReceived))
	}()
	for {
		f, err := u.rd.Next()
		if err != nil {
			return fmt.Errorf("%s Mark%d: %w", u.room, u.num, err)
		}
		switch {
		case f.ID == protocol.IDChat && f.Type == protocol.Indication:
			v, err := protocol.ParseChat(f.Body)
			if err != nil {
				return err
			}
			u.myReceived++
			seq := u.mySent + u.myReceived
			if string(v.UserName) != string(u.names[(seq-1)%u.users+1]) {
				u.integrity.Add(1)
			}
			if seq%u.users == u.num-1 {
				if u.mySent < u.count {
					if err := u.send(); err != nil {
						return err
					}
				} else if u.num == 1 {
					if _, err := u.nc.Write(u.exit); err != nil {
						return err
					}
				}
			}
		case f.ID == protocol.IDExitRoom && f.Type == protocol.Indication:
			u.exited++
			if u.exited == u.num-1 {
				if _, err := u.nc.Write(u.exit); err != nil {
					return err
				}
			}
		case f.ID == protocol.IDRoomList && f.Type == protocol.Confirm:
			return nil
		}
	}
}

func (u *markUser) send() error {
	u.mySent++
	_, err := u.nc.Write(u.chat)
	return err
}

// childServer is this test binary re-executed as a server process (see
// TestMain), so that its CPU and open files are its own.
type childServer struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	stdin  io.Writer
	lines  chan string
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const childEnv = "VOLANOGO_SERVER_TEST_CHILD"

// startChild starts a server process on engine; nofile > 0 lowers its
// open-files limit first.
func startChild(t testing.TB, engine string, nofile int) *childServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "VOLANOGO_CHILD_NOFILE="+strconv.Itoa(nofile),
		"VOLANOGO_CHILD_ENGINE="+engine)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errBuf := &syncBuffer{}
	cmd.Stderr = errBuf
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var addr string
	select {
	case l := <-line:
		addr = strings.TrimPrefix(l, "ADDR ")
	case <-time.After(10 * time.Second):
	}
	c := &childServer{cmd: cmd, addr: addr, stderr: errBuf, stdin: stdin, lines: line}
	t.Cleanup(func() {
		stdin.Close() // the child exits when its stdin closes
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	require.NotEmpty(t, addr, "child server did not start: %s", errBuf.String())
	return c
}

// announced returns the address the child announced on its line with
// prefix ("METRICS", "WS"), the next line it prints after ADDR.
func (c *childServer) announced(t testing.TB, prefix string) string {
	t.Helper()
	select {
	case l := <-c.lines:
		require.True(t, strings.HasPrefix(l, prefix+" "), "child announced %q, not %s", l, prefix)
		return strings.TrimPrefix(l, prefix+" ")
	case <-time.After(10 * time.Second):
		t.Fatalf("the child announced no %s address", prefix)
		return ""
	}
}

// gc makes the child collect garbage and return memory to the system.
func (c *childServer) gc(t testing.TB) {
	t.Helper()
	_, err := io.WriteString(c.stdin, "gc\n")
	require.NoError(t, err)
	select {
	case l := <-c.lines:
		require.Equal(t, "ok", l)
	case <-time.After(30 * time.Second):
		t.Fatal("child did not collect garbage")
	}
}

// rss returns the child's resident set size from /proc.
func (c *childServer) rss(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", c.cmd.Process.Pid))
	require.NoError(t, err)
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// cpu returns the child's user+system CPU time from /proc.
func (c *childServer) cpu(t testing.TB) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	require.NoError(t, err)
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func childMain() int {
	if n, _ := strconv.Atoi(os.Getenv("VOLANOGO_CHILD_NOFILE")); n > 0 {
		if err := setOpenFiles(n); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 1
		}
	}
	if os.Getenv("VOLANOGO_CHILD_WRITE") == "write" {
		useSendto = false
	}
	if path := os.Getenv("VOLANOGO_CHILD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() {
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := Config{Listen: "127.0.0.1:0", Logger: logger, Engine: os.Getenv("VOLANOGO_CHILD_ENGINE")}
	if os.Getenv("VOLANOGO_CHILD_METRICS") != "" {
		cfg.MetricsListen = "127.0.0.1:0"
	}
	switch os.Getenv("VOLANOGO_CHILD_WS") {
	case "":
	case "only":
		cfg.Listen, cfg.WSListen = "", "127.0.0.1:0"
	default:
		cfg.WSListen = "127.0.0.1:0"
	}
	s, err := New(cfg)
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", s.Addr())
	if cfg.MetricsListen != "" {
		fmt.Printf("METRICS %s\n", s.MetricsAddr())
	}
	if cfg.WSListen != "" {
		fmt.Printf("WS %s\n", s.WSAddr())
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		// Each line on stdin: "gc" collects garbage and returns memory to
		// the system, then answers "ok"; end of input stops the server.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "gc" {
				runtime.GC()
				debug.FreeOSMemory()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				fmt.Fprintf(os.Stderr, "memstats heap_inuse=%d stack_inuse=%d sys=%d goroutines=%d\n",
					ms.HeapInuse, ms.StackInuse, ms.Sys, runtime.NumGoroutine())
				fmt.Println("ok")
			}
		}
		stop <- syscall.SIGTERM
	}()
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 1
	}
	return 0
}
