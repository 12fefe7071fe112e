package floor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/results"
)

// The parent and the child of a floor talk in lines: the parent writes
// the childSpec (JSON) on the child's standard input; the child connects
// every client end, sending each connection's index first, and writes
// "ready"; the parent accepts them, starts its server thread and writes
// "go"; the child runs the client thread and writes its childResult
// (JSON); the parent stops its server and closes the child's standard
// input, on which the child closes its connections and exits.
const (
	lineReady = "ready"
	lineGo    = "go"
)

type childSpec struct {
	Addr         [4]byte       `json:"addr"`
	Port         int           `json:"port"`
	Rooms        int           `json:"rooms"`
	Users        int           `json:"users"`
	Count        int           `json:"count"`
	ChatOnly     bool          `json:"chat_only,omitempty"`
	StallTimeout time.Duration `json:"stall_timeout"`
	// A paced floor's schedule (Pause 0: turn-taking).
	Pause    time.Duration `json:"pause,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Seed     int64         `json:"seed,omitempty"`
}

type childResult struct {
	CPUSeconds     float64 `json:"cpu_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Error          string  `json:"error,omitempty"`
	// A paced floor's figures.
	Sent              int64              `json:"sent,omitempty"`
	Delivered         int64              `json:"delivered,omitempty"`
	Delivery          *results.Histogram `json:"delivery,omitempty"`
	DeliveryScheduled *results.Histogram `json:"delivery_scheduled,omitempty"`
}

// maxLine bounds a line of the child's (its result carries two encoded
// histograms, a few kilobytes).
const maxLine = 1 << 20

// childProc is the parent's view of the child.
type childProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // closed when the child's standard output ends
	stderr *tail
	exited chan struct{}
	err    error // the child's exit, once exited is closed
	stall  time.Duration
}

// tail keeps the last bytes a child wrote on its standard error.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func startChild(ctx context.Context, s *Spec, addr *unix.SockaddrInet4) (*childProc, error) {
	argv := s.ChildCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the clients' process: find this executable: %w", err)
		}
		argv = []string{exe, "floor-child"}
	}
	spec, err := json.Marshal(childSpec{Addr: addr.Addr, Port: addr.Port, Rooms: s.Rooms, Users: s.Users, Count: s.Count, ChatOnly: s.ChatOnly, StallTimeout: s.StallTimeout,
		Pause: s.Pause, Duration: s.Duration, Seed: s.Seed})
	if err != nil {
		return nil, err
	}
	c := &childProc{lines: make(chan string, 4), stderr: &tail{}, exited: make(chan struct{}), stall: s.StallTimeout}
	c.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the clients' process: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 4096), maxLine)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	if _, err := c.stdin.Write(append(spec, '\n')); err != nil {
		c.stop()
		return nil, c.exitError(fmt.Sprintf("did not take its spec (%v)", err))
	}
	return c, nil
}

// failed is the child's failure if it has exited (nil while it runs).
func (c *childProc) failed() error {
	select {
	case <-c.exited:
		return c.exitError("exited")
	default:
		return nil
	}
}

func (c *childProc) exitError(what string) error {
	msg := fmt.Sprintf("the clients' process %s", what)
	if c.err != nil {
		msg += " (" + c.err.Error() + ")"
	}
	if t := c.stderr.String(); t != "" {
		msg += ": " + t
	}
	return errors.New(msg)
}

// run waits for the child's ready line, starts its clients and waits for
// their result (and a paced floor's figures, nil for a turn-taking one).
func (c *childProc) run(ctx context.Context) (sideResult, *pacedFigures) {
	line, err := c.next(ctx, c.stall)
	if err != nil {
		return sideResult{err: err}, nil
	}
	if line != lineReady {
		return sideResult{err: fmt.Errorf("the clients' process said %q, not %q", line, lineReady)}, nil
	}
	if _, err := io.WriteString(c.stdin, lineGo+"\n"); err != nil {
		return sideResult{err: fmt.Errorf("the clients' process: %w", err)}, nil
	}
	// The clients end on their own, or fail when they stall.
	if line, err = c.next(ctx, 0); err != nil {
		return sideResult{err: err}, nil
	}
	var r childResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return sideResult{err: fmt.Errorf("the clients' process said %.200q: %w", line, err)}, nil
	}
	if r.Error != "" {
		return sideResult{err: fmt.Errorf("the clients' process: %s", r.Error)}, nil
	}
	var pf *pacedFigures
	if r.Delivery != nil && r.DeliveryScheduled != nil {
		pf = &pacedFigures{sent: r.Sent, delivered: r.Delivered, delivery: r.Delivery, deliveryScheduled: r.DeliveryScheduled}
	}
	return sideResult{cpu: r.CPUSeconds, elapsed: r.ElapsedSeconds}, pf
}

// next is the child's next line, waiting at most timeout (0: until the
// child ends or ctx does).
func (c *childProc) next(ctx context.Context, timeout time.Duration) (string, error) {
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			<-c.exited
			return "", c.exitError("ended")
		}
		return line, nil
	case <-ctx.Done():
		return "", ErrInterrupted
	case <-expire:
		return "", fmt.Errorf("the clients' process said nothing for %s", timeout)
	}
}

// stop closes the child's standard input, on which it exits, and waits for
// it (killing it after a while).
func (c *childProc) stop() {
	_ = c.stdin.Close()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case _, ok := <-c.lines:
			if ok {
				continue
			}
			<-c.exited
			return
		case <-t.C:
			_ = c.cmd.Process.Kill()
			t.Reset(5 * time.Second)
		}
	}
}

// RunChild is the clients' side of a floor in a child process (`volanogo
// floor-child`): its spec and the start on in, its lines on out.
func RunChild(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	if !sc.Scan() {
		return errors.New("floor-child: no spec on standard input")
	}
	var s childSpec
	if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
		return fmt.Errorf("floor-child: spec: %w", err)
	}
	n := s.Rooms * s.Users
	paced := s.Pause > 0
	if s.Rooms < 1 || s.Users < 2 || (s.Count < 1 && !paced) || n > 1<<24 || (paced && (s.Count != 0 || s.Duration <= 0)) {
		return fmt.Errorf("floor-child: %d rooms of %d users, count %d, pause %s, duration %s: not a floor", s.Rooms, s.Users, s.Count, s.Pause, s.Duration)
	}
	plan := &script{users: s.Users}
	if paced {
		var err error
		if plan.pacing, err = newPacing(s.Rooms, s.Users, s.Pause, s.Duration, s.Seed); err != nil {
			return fmt.Errorf("floor-child: %w", err)
		}
	} else if !s.ChatOnly {
		var err error
		if plan, err = newScript(s.Rooms, s.Users, s.Count); err != nil {
			return fmt.Errorf("floor-child: %w", err)
		}
	}
	p := &pairs{cli: make([]int32, 0, n)}
	defer p.close()
	addr := &unix.SockaddrInet4{Addr: s.Addr, Port: s.Port}
	for i := 0; i < n; i++ {
		if i%1000 == 0 && ctx.Err() != nil {
			return ErrInterrupted
		}
		c, err := dial(addr)
		if err != nil {
			return fmt.Errorf("floor-child: connection %d of %d: %w", i+1, n, err)
		}
		p.cli = append(p.cli, int32(c))
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(i))
		if _, err := unix.Write(c, b[:]); err != nil {
			return fmt.Errorf("floor-child: send connection %d's index: %w", i, err)
		}
	}
	if _, err := io.WriteString(out, lineReady+"\n"); err != nil {
		return err
	}
	if !sc.Scan() || sc.Text() != lineGo {
		return errors.New("floor-child: the parent did not say go")
	}
	var done atomic.Bool
	defer context.AfterFunc(ctx, func() { done.Store(true) })()
	var r sideResult
	var pf *pacedFigures
	if paced {
		r, pf = pacedClients(p.cli, plan.pacing, s.StallTimeout, &done)
	} else {
		r = clients(p.cli, s.Count, plan, s.StallTimeout, &done)
	}
	res := childResult{CPUSeconds: r.cpu, ElapsedSeconds: r.elapsed}
	if r.err != nil {
		res.Error = r.err.Error()
	}
	if pf != nil {
		res.Sent, res.Delivered, res.Delivery, res.DeliveryScheduled = pf.sent, pf.delivered, pf.delivery, pf.deliveryScheduled
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if _, err := out.Write(append(line, '\n')); err != nil {
		return err
	}
	// Keep the connections open until the parent's server has stopped:
	// closing them would wake it for nothing while it is measured (with
	// the exit phase, they are closed already).
	for sc.Scan() {
	}
	return r.err
}
