package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
)

// lan is two network namespaces joined by a veth pair, each end shaped
// by tc netem: a LAN of 100 Mbit/s and 0.1 ms each way (a kernel without
// netem gets the rate alone, from tbf, and netem is false). Its traffic
// stays in the namespaces, which the test's cleanup deletes (and with
// them the pair).
type lan struct {
	server, client     string // namespace names
	serverIP           string
	serverIf, clientIf string // the veth pair's ends
	netem              bool
}

// newLAN makes the namespaces, or skips the test where it cannot: not
// root, no ip or tc, a kernel or a container that refuses namespaces.
func newLAN(t *testing.T) *lan {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (iproute2)", tool)
		}
	}
	id := strconv.Itoa(os.Getpid() % 100000)
	l := &lan{server: "vg28s" + id, client: "vg28c" + id, serverIP: "10.28.0.1", serverIf: "vgs" + id, clientIf: "vgc" + id}
	if out, err := exec.Command("ip", "netns", "add", l.server).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", l.server).Run() })
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	run("ip", "netns", "add", l.client)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", l.client).Run() })
	run("ip", "-n", l.server, "link", "add", l.serverIf, "type", "veth", "peer", "name", l.clientIf, "netns", l.client)
	l.netem = true
	for _, s := range []struct{ ns, ifc, addr string }{{l.server, l.serverIf, l.serverIP}, {l.client, l.clientIf, "10.28.0.2"}} {
		run("ip", "-n", s.ns, "link", "set", "lo", "up")
		run("ip", "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.ifc)
		run("ip", "-n", s.ns, "link", "set", s.ifc, "up")
		out, err := exec.Command("ip", "netns", "exec", s.ns, "tc", "qdisc", "add", "dev", s.ifc, "root", "netem", "delay", "0.1ms", "rate", "100mbit").CombinedOutput()
		if err != nil {
			t.Logf("no netem here (%v: %s): the link is shaped to 100 Mbit/s by tbf, with no delay", err, strings.TrimSpace(string(out)))
			l.netem = false
			run("ip", "netns", "exec", s.ns, "tc", "qdisc", "add", "dev", s.ifc, "root", "tbf", "rate", "100mbit", "burst", "32kb", "latency", "50ms")
		}
	}
	return l
}

// TestLANNamespaces runs volanogo serve in one namespace and volanogo
// load in the other, across the shaped veth pair, and the same load on
// loopback beside it: the report's environments show both machines'
// sides, the path's round trip (twice the netem delay at least) and the
// interface; the loopback run shows its own.
func TestLANNamespaces(t *testing.T) {
	l := newLAN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, "ip", "netns", "exec", l.server, os.Args[0], "serve",
		"--listen", l.serverIP+":0", "--metrics-listen", l.serverIP+":0")
	serve.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1")
	out, err := serve.StdoutPipe()
	require.NoError(t, err)
	var serveErr lockedBuffer
	serve.Stderr = &serveErr
	require.NoError(t, serve.Start())
	t.Cleanup(func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
	})
	ready := make(chan handshake.Serve, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if hs, ok := handshake.ParseServe(sc.Text()); ok {
				ready <- hs
			}
		}
	}()
	var hs handshake.Serve
	select {
	case hs = <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve in %s did not start: %s", l.server, serveErr.String())
	}
	dir := t.TempDir()
	load := func(label string, args ...string) {
		t.Helper()
		argv := append([]string{"netns", "exec", l.client, os.Args[0], "load", "-rooms", "2", "-users", "5", "-count", "20",
			"-runs", "1", "--label", label, "-o", dir, "--quiet", "-file", ""}, args...)
		cmd := exec.CommandContext(ctx, "ip", argv...)
		cmd.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
	host, port, ok := strings.Cut(hs.Chat, ":")
	require.True(t, ok, hs.Chat)
	load("lan", "-host", host, "-port", port, "--server-metrics", "http://"+hs.Metrics+"/metrics")
	load("loopback", "--serve")

	docs, errs := results.ReadPaths([]string{dir}, nil)
	require.Empty(t, errs)
	require.Len(t, docs, 2)
	byLabel := map[string]*results.Document{}
	for _, d := range docs {
		byLabel[d.Label] = d
	}
	lanDoc, loDoc := byLabel["lan"], byLabel["loopback"]
	require.NotNil(t, lanDoc)
	require.NotNil(t, loDoc)
	assert.True(t, lanDoc.Passed, "%+v", lanDoc.Failures)
	require.NotNil(t, lanDoc.Network)
	assert.Equal(t, l.clientIf, lanDoc.Network.Interface)
	assert.False(t, lanDoc.Network.Loopback)
	if l.netem {
		assert.GreaterOrEqual(t, lanDoc.Network.RTTMinSeconds, 0.0002, "netem delays each way by 0.1 ms")
		assert.Less(t, loDoc.Network.RTTSeconds, lanDoc.Network.RTTSeconds, "loopback is quicker than the shaped link")
	}
	assert.Positive(t, lanDoc.Network.RTTSeconds)
	require.NotNil(t, lanDoc.ServerInfo)
	assert.Equal(t, "volanogo serve", lanDoc.ServerInfo.Product)
	require.NotNil(t, lanDoc.ServerInfo.Environment, "the server's machine, from its metrics")
	require.NotNil(t, loDoc.Network)
	assert.True(t, loDoc.Network.Loopback)

	rep := exec.CommandContext(ctx, os.Args[0], "report", dir)
	rep.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1")
	b, err := rep.CombinedOutput()
	require.NoError(t, err, "%s", b)
	text := string(b)
	assert.Contains(t, text, "Server runtime:")
	assert.Contains(t, text, "Network:")
	assert.Contains(t, text, "TCP connect, median of 10")
	assert.Contains(t, text, l.clientIf)
	assert.Contains(t, text, "loopback")
	t.Logf("LAN RTT %.3f ms, loopback %.3f ms", lanDoc.Network.RTTSeconds*1e3, loDoc.Network.RTTSeconds*1e3)
}
