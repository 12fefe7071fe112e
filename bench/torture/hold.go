package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"
)

// One process holds at most perProc of an attack's connections by default
// (the open-files limit is per process): past Config.PerProc, conn-flood
// and slowloris-silent re-execute this program as helpers, each holding
// its share, and add up what they report.
const perProc = 15000

// holdEnv carries a helper's holdSpec.
const holdEnv = "VOLANOGO_TORTURE_HOLD"

// holdSpec is a helper's job.
type holdSpec struct {
	Target  string        `json:"target"`
	N       int           `json:"n"`
	Access  bool          `json:"access"` // pass Access (conn-flood) or send nothing (slowloris-silent)
	Wait    time.Duration `json:"wait"`   // silent: how long the server has to close them
	Timeout time.Duration `json:"timeout"`
}

// holdReport is a helper's line on its stdout.
type holdReport struct {
	Opened int    `json:"opened"`
	Failed int    `json:"failed"`
	Err    string `json:"err,omitempty"`
	Closed int    `json:"closed"`
	Done   bool   `json:"done"` // silent: Closed is final
}

// holdMain is a helper: it opens its connections and reports; a silent
// helper then counts the server's closes and reports again; an Access
// helper holds its connections until its stdin closes.
func holdMain(spec string, stdin io.Reader, stdout io.Writer) int {
	var h holdSpec
	if err := json.Unmarshal([]byte(spec), &h); err != nil {
		fmt.Fprintln(stdout, err)
		return 2
	}
	ctx := context.Background()
	conns, failed, err := openMany(ctx, h.N, func(ctx context.Context, i int) (net.Conn, error) {
		if !h.Access {
			return dialTCP(ctx, h.Target)
		}
		c, err := dialClient(ctx, h.Target)
		if err != nil {
			return nil, err
		}
		if err := c.access("", h.Timeout); err != nil {
			c.close()
			return nil, err
		}
		return c.nc, nil
	})
	defer closeAll(conns)
	enc := json.NewEncoder(stdout)
	r := holdReport{Opened: len(conns), Failed: failed}
	if err != nil {
		r.Err = err.Error()
	}
	_ = enc.Encode(r)
	if h.Access {
		_, _ = io.Copy(io.Discard, stdin)
		return 0
	}
	r.Closed, r.Done = countClosed(ctx, conns, h.Wait), true
	_ = enc.Encode(r)
	return 0
}

// helpers runs the helpers of an attack of n connections and returns
// their reports once each has opened; release (for Access helpers)
// closes their connections; final (for silent ones) waits for their
// closing counts.
type helpers struct {
	cmds   []*exec.Cmd
	stdins []io.WriteCloser
	lines  []*bufio.Scanner
}

func startHelpers(ctx context.Context, e *env, n int, access bool) (*helpers, holdReport, error) {
	h := &helpers{}
	var sum holdReport
	for n > 0 {
		k := min(n, e.cfg.PerProc)
		n -= k
		spec, _ := json.Marshal(holdSpec{Target: e.cfg.Target, N: k, Access: access, Wait: e.cfg.Wait, Timeout: e.cfg.Timeout})
		cmd := exec.CommandContext(ctx, e.cfg.Self)
		cmd.Env = append(os.Environ(), holdEnv+"="+string(spec))
		cmd.Stderr = os.Stderr //nolint:forbidigo // a helper's complaints go where the suite's do
		in, err := cmd.StdinPipe()
		if err != nil {
			h.stop()
			return nil, sum, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			h.stop()
			return nil, sum, err
		}
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, sum, err
		}
		h.cmds, h.stdins = append(h.cmds, cmd), append(h.stdins, in)
		h.lines = append(h.lines, bufio.NewScanner(out))
	}
	for _, sc := range h.lines {
		r, err := nextReport(sc)
		if err != nil {
			h.stop()
			return nil, sum, err
		}
		sum.Opened += r.Opened
		sum.Failed += r.Failed
		if sum.Err == "" {
			sum.Err = r.Err
		}
	}
	return h, sum, nil
}

func nextReport(sc *bufio.Scanner) (holdReport, error) {
	var r holdReport
	if !sc.Scan() {
		return r, errors.New("an attacker helper ended without a report")
	}
	err := json.Unmarshal(sc.Bytes(), &r)
	return r, err
}

// closed waits for the silent helpers' final counts.
func (h *helpers) closed() int {
	n := 0
	for _, sc := range h.lines {
		if r, err := nextReport(sc); err == nil {
			n += r.Closed
		}
	}
	return n
}

// stop releases the helpers' connections and waits for them.
func (h *helpers) stop() {
	for _, in := range h.stdins {
		_ = in.Close()
	}
	var wg sync.WaitGroup
	for _, c := range h.cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Wait()
		}()
	}
	wg.Wait()
}
