// Command torture attacks a VOLANO chat server the way a hostile or broken
// client would, while a room of real users keeps chatting beside it, and
// prints one row per attack: held (the server is alive, the real users'
// throughput stayed within the tolerance, the attacker's connections were
// closed as expected and for the expected reason), degraded (alive, but
// the users slowed beyond the tolerance or an attacker was not closed in
// time) or failed (the users were cut off or the server stopped
// answering), with the figures: the users' chats per second before,
// during and after, new connections served meanwhile, the server's RSS
// before and after, and its closes by reason (from its metrics).
//
// It is not part of CI: a full run takes minutes. A smoke test runs every
// attack at a tiny size against an in-process server.
//
//	go run ./bench/torture --serve                      # volanogo serve with defaults, started here
//	go run ./bench/torture --target 127.0.0.1:8000 --ws ws://127.0.0.1:8080/chat \
//	    --metrics http://127.0.0.1:8002/metrics --pid PID
//	go run ./bench/torture --server-cmd 'bench/original/serve.sh --volano-dir DIR --port {port}'
//	go run ./bench/torture --serve --only slowloris-silent,never-reading --duration 5s
//
// It exits 0 when no attack failed, 1 when one did (or any was degraded,
// with --strict), 2 on a bad flag.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/cli"
	"github.com/volanogo/volanogo/internal/handshake"
)

// maxConns bounds --rooms, which one process holds (the open-files hard
// limit here is 20,000 per process; the Go runtime lifts the soft limit to
// it), and --conns, which helper processes share past perProc.
const maxConns = 18000

// serveEnv makes this program `volanogo serve` (for --serve): the server
// is built from the same module as the suite.
const serveEnv = "VOLANOGO_TORTURE_SERVE"

func main() {
	if spec := os.Getenv(holdEnv); spec != "" {
		os.Exit(holdMain(spec, os.Stdin, os.Stdout))
	}
	if os.Getenv(serveEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var only, serveArgs, serverCmd string
	var serve, strict bool
	fs.StringVar(&cfg.Target, "target", "", "chat address of the server, host:port")
	fs.StringVar(&cfg.WS, "ws", "", "WebSocket URL of the server, ws://host:port/chat (empty: skip the WebSocket attacks)")
	fs.StringVar(&cfg.Metrics, "metrics", "", "Prometheus URL of the server, http://host:port/metrics (empty: no closes by reason)")
	fs.IntVar(&cfg.PID, "pid", 0, "the server's process id, for its RSS")
	fs.StringVar(&only, "only", "", "comma-separated attacks to run (default: all)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long each attack presses")
	fs.DurationVar(&cfg.Wait, "wait", 60*time.Second, "how long the server has to close an attacker it should close")
	fs.DurationVar(&cfg.Window, "window", 3*time.Second, "the real users' measuring window before and after each attack")
	fs.DurationVar(&cfg.Drip, "drip", 10*time.Second, "slowloris-drip: one byte per this long")
	fs.IntVar(&cfg.Conns, "conns", 2000, "connections of the connection-heavy attacks (conn-flood and slowloris-silent spread them over processes of 15,000)")
	fs.IntVar(&cfg.Rooms, "rooms", 2000, "rooms the rooms attack makes")
	fs.IntVar(&cfg.Privates, "privates", 10000, "private sessions the private-flood attack asks for")
	fs.Float64Var(&cfg.Tolerance, "tolerance", 0.5, "share by which the real users' throughput may fall and still hold")
	fs.IntVar(&cfg.ProbeUsers, "users", 4, "real users in their room")
	fs.Float64Var(&cfg.ProbeRate, "rate", 100, "real users' chats per second (each waits for the previous one)")
	fs.BoolVar(&serve, "serve", false, "start volanogo serve (this module's) with defaults on free loopback ports, and stop it at the end")
	fs.StringVar(&serveArgs, "serve-args", "", "more arguments for --serve's server (e.g. an engine)")
	fs.StringVar(&serverCmd, "server-cmd", "", "start this shell command as the server, {port} replaced by a free port (e.g. the original's bench/original/serve.sh)")
	fs.BoolVar(&strict, "strict", false, "exit 1 when an attack is degraded, too")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: torture (--target HOST:PORT | --serve | --server-cmd CMD) [options]")
		fmt.Fprintln(stderr, "attacks:")
		for _, a := range attacks() {
			fmt.Fprintf(stderr, "  %-20s %s\n", a.name, a.what)
		}
		fmt.Fprintln(stderr, "options:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "torture: %s (see --help)\n", msg)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument " + fs.Arg(0))
	}
	n := 0
	for _, on := range []bool{cfg.Target != "", serve, serverCmd != ""} {
		if on {
			n++
		}
	}
	if n != 1 {
		return usage("give exactly one of --target, --serve, --server-cmd")
	}
	if only != "" {
		cfg.Only = strings.Split(only, ",")
		if _, err := selectAttacks(cfg.Only); err != nil {
			return usage(err.Error())
		}
	}
	if cfg.Rooms > maxConns || cfg.Conns > 10*perProc {
		return usage(fmt.Sprintf("--rooms goes up to %d (one process holds them, under its open-files limit), --conns to %d", maxConns, 10*perProc))
	}
	if self, err := os.Executable(); err == nil {
		cfg.Self = self
	}
	if cfg.Duration <= 0 || cfg.Wait <= 0 || cfg.Window <= 0 || cfg.Drip <= 0 || cfg.Conns <= 0 || cfg.Rooms <= 0 ||
		cfg.Privates <= 0 || cfg.ProbeUsers < 2 || cfg.ProbeRate <= 0 || cfg.Tolerance <= 0 || cfg.Tolerance >= 1 {
		return usage("durations and sizes must be positive, --users at least 2, --tolerance between 0 and 1")
	}
	var srv *started
	var err error
	switch {
	case serve:
		srv, err = startServe(ctx, strings.Fields(serveArgs), stderr)
		if err == nil {
			cfg.Target, cfg.WS, cfg.Metrics, cfg.PID = srv.chat, srv.ws, srv.metrics, srv.pid
		}
	case serverCmd != "":
		srv, err = startCmd(ctx, serverCmd, stderr)
		if err == nil {
			cfg.Target, cfg.PID = srv.chat, srv.pid
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "torture:", err)
		return 1
	}
	if srv != nil {
		defer srv.stop(stderr)
	}
	fmt.Fprintf(stdout, "torture: target %s ws %s metrics %s; %d processors, load average %s\n",
		cfg.Target, orNone(cfg.WS), orNone(cfg.Metrics), runtime.NumCPU(), loadavg())
	rows, err := Run(ctx, cfg, stdout)
	fmt.Fprintln(stdout)
	WriteTable(stdout, rows)
	fmt.Fprintf(stdout, "load average %s at %s UTC\n", loadavg(), time.Now().UTC().Format("15:04:05"))
	if srv != nil {
		srv.report(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "torture:", err)
		return 1
	}
	code := 0
	for _, r := range rows {
		if r.Verdict == Failed || strict && r.Verdict == Degraded {
			code = 1
		}
	}
	return code
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// started is a server process the suite started.
type started struct {
	cmd               *exec.Cmd
	chat, ws, metrics string
	pid               int
	log               *os.File
	waitErr           chan error
	describe          string
}

// startServe starts this program as `volanogo serve` with defaults but for
// the ports (free loopback ones) and extra.
func startServe(ctx context.Context, extra []string, stderr io.Writer) (*started, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0",
		"--metrics-listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	s, err := startProcess(cmd, "volanogo "+strings.Join(args, " "))
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-lines:
		ready, ok := handshake.ParseServe(l)
		if !ok {
			s.stop(stderr)
			return nil, fmt.Errorf("volanogo serve said %q, not its ready line", l)
		}
		s.chat = ready.Chat
		if ready.WS != "" {
			s.ws = "ws://" + ready.WS + "/chat"
		}
		if ready.Metrics != "" {
			s.metrics = "http://" + ready.Metrics + "/metrics"
		}
		return s, nil
	case err := <-s.waitErr:
		return nil, fmt.Errorf("volanogo serve exited before it was ready: %v (log %s)", err, s.log.Name())
	case <-time.After(30 * time.Second):
		s.stop(stderr)
		return nil, errors.New("volanogo serve not ready in 30s")
	case <-ctx.Done():
		s.stop(stderr)
		return nil, ctx.Err()
	}
}

// startCmd starts a shell command as the server on a free port and waits
// until the port accepts.
func startCmd(ctx context.Context, command string, stderr io.Writer) (*started, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	line := strings.ReplaceAll(command, "{port}", strconv.Itoa(port))
	s, err := startProcess(exec.Command("sh", "-c", "exec "+line), line)
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout = s.log
	if err := s.start(); err != nil {
		return nil, err
	}
	s.chat = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", s.chat, time.Second); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.waitErr:
			return nil, fmt.Errorf("%s exited before listening: %v (log %s)", line, err, s.log.Name())
		case <-ctx.Done():
			s.stop(stderr)
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.stop(stderr)
	return nil, fmt.Errorf("%s: nothing listens on %s after 60s", line, s.chat)
}

func startProcess(cmd *exec.Cmd, describe string) (*started, error) {
	log, err := os.CreateTemp("", "torture-server-*.log")
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	return &started{cmd: cmd, log: log, describe: describe, waitErr: make(chan error, 1)}, nil
}

func (s *started) start() error {
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.pid = s.cmd.Process.Pid
	go func() { s.waitErr <- s.cmd.Wait() }()
	return nil
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (s *started) stop(stderr io.Writer) {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.waitErr:
		s.waitErr <- err
	case <-time.After(10 * time.Second):
		fmt.Fprintln(stderr, "torture: the server did not stop on SIGTERM in 10s; killing it")
		_ = s.cmd.Process.Kill()
	}
	s.log.Close()
}

// report says what the server logged.
func (s *started) report(w io.Writer) {
	b, err := os.ReadFile(s.log.Name())
	if err != nil {
		return
	}
	lines := strings.Count(string(b), "\n")
	warn := strings.Count(string(b), "level=WARN")
	errs := strings.Count(string(b), "level=ERROR")
	fmt.Fprintf(w, "server: %s (pid %d); its log: %d lines, %d warnings, %d errors, in %s\n",
		s.describe, s.pid, lines, warn, errs, s.log.Name())
}
