package sysinfo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCollectLinux(t *testing.T) {
	env := Collect()
	assert.NotEmpty(t, env.Kernel)
	assert.NotEmpty(t, env.CPUModel)
	assert.Positive(t, env.CPUs)
	assert.Greater(t, env.MemoryBytes, int64(64<<20))
	var rl unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &rl))
	assert.Equal(t, int64(rl.Cur), env.OpenFilesSoft)
	assert.Equal(t, int64(rl.Max), env.OpenFilesHard)
	assert.Positive(t, env.OpenFilesSoft)
	if _, err := os.Stat("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		assert.Regexp(t, `^\d+ \d+$`, env.EphemeralPorts)
	}
	if _, err := os.Stat("/etc/os-release"); err == nil {
		assert.NotEmpty(t, env.Distribution)
	}
	t.Logf("%+v", env)
}

func TestParseCPUInfo(t *testing.T) {
	x86 := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	assert.Equal(t, "AMD EPYC 7B13", parseCPUInfo(x86))
	arm := "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\nHardware\t: BCM2835\n"
	assert.Equal(t, "BCM2835", parseCPUInfo(arm))
	assert.Equal(t, "", parseCPUInfo(""))
}

func TestParseMeminfo(t *testing.T) {
	s := "MemTotal:        8145512 kB\nMemFree:          123 kB\nHugePages_Total:       0\n"
	assert.Equal(t, int64(8145512*1024), parseMeminfo(s, "MemTotal"))
	assert.Equal(t, int64(0), parseMeminfo(s, "HugePages_Total"))
	assert.Equal(t, int64(0), parseMeminfo(s, "Missing"))
	assert.Equal(t, int64(0), parseMeminfo("MemTotal: x kB", "MemTotal"))
}

func TestReadProcFake(t *testing.T) {
	// A command with spaces and parentheses in it.
	dir := t.TempDir()
	proc := filepath.Join(dir, "42")
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "fd"), 0o755))
	for _, fd := range []string{"0", "1", "2"} {
		require.NoError(t, os.WriteFile(filepath.Join(proc, "fd", fd), nil, 0o644))
	}
	line := "42 (a (b) c) S 1 42 42 0 -1 4194304 99 0 0 0 250 130 0 0 20 0 7 0 37496 3133440 409 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(proc, "stat"), []byte(line), 0o644))
	limits := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max open files            1024                 20000                files     \n"
	require.NoError(t, os.WriteFile(filepath.Join(proc, "limits"), []byte(limits), 0o644))
	fs, err := procfs.NewFS(dir)
	require.NoError(t, err)
	p, err := readProc(fs, 42)
	require.NoError(t, err)
	assert.InDelta(t, 2.5, p.UserSeconds, 1e-9)
	assert.InDelta(t, 1.3, p.SystemSeconds, 1e-9)
	assert.Equal(t, 7, p.Threads)
	assert.Equal(t, int64(409*os.Getpagesize()), p.RSSBytes)
	assert.Equal(t, 3, p.FDs)
	assert.Equal(t, int64(1024), p.MaxFDs)

	require.NoError(t, os.WriteFile(filepath.Join(proc, "stat"), []byte("42 (x"), 0o644))
	_, err = readProc(fs, 42)
	assert.Error(t, err, "a malformed stat")
}

func TestReadProcChild(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	cmd := exec.Command(sleep, "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Wait until the child has exec'd sleep (its RSS is then sleep's).
	var p ProcStat
	require.Eventually(t, func() bool {
		comm, err := os.ReadFile("/proc/" + itoa(cmd.Process.Pid) + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
			return false
		}
		p, err = ReadProc(cmd.Process.Pid)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	assert.Positive(t, p.RSSBytes)
	assert.Less(t, p.RSSBytes, int64(100<<20))
	assert.Equal(t, 1, p.Threads)
	assert.GreaterOrEqual(t, p.FDs, 3) // stdin, stdout, stderr at least
	assert.Less(t, p.CPUSeconds(), 1.0)
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestReadProcNoSuchProcess(t *testing.T) {
	_, err := ReadProc(1 << 30)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestSelfCPUGrows(t *testing.T) {
	before, err := Self()
	require.NoError(t, err)
	assert.Positive(t, before.RSSBytes)
	assert.GreaterOrEqual(t, before.Threads, 1)
	assert.GreaterOrEqual(t, before.FDs, 3)

	// Burn 60 ms of CPU as getrusage(2) counts it (wall time is no guide on a
	// loaded machine), then /proc must show it too, to a tick or two.
	cpu := func() time.Duration {
		var ru unix.Rusage
		require.NoError(t, unix.Getrusage(unix.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, deadline := cpu(), time.Now().Add(10*time.Second)
	x := 0
	for cpu()-start < 60*time.Millisecond && time.Now().Before(deadline) {
		for i := 0; i < 10000; i++ {
			x += i * i
		}
	}
	_ = x
	after, err := Self()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after.CPUSeconds()-before.CPUSeconds(), 0.04)
}

func TestPeakRSS(t *testing.T) {
	self, err := Self()
	require.NoError(t, err)
	peak := PeakRSS()
	assert.Positive(t, peak)
	assert.GreaterOrEqual(t, peak, self.RSSBytes/2) // peak ≥ now, modulo page accounting
}

func TestRaiseOpenFilesLimit(t *testing.T) {
	soft, hard, err := RaiseOpenFilesLimit()
	require.NoError(t, err)
	assert.Positive(t, soft)
	// Go raises the soft limit at start-up; after this call it is the hard one.
	assert.Equal(t, hard, soft)
	env := Collect()
	assert.Equal(t, int64(soft), env.OpenFilesSoft)
}

// TestGoRaisesOpenFilesAtStart checks what RaiseOpenFilesLimit's comment
// says: a Go program started with a low soft limit runs with the hard one
// less one, and RaiseOpenFilesLimit makes it the hard one. It starts this
// test binary under `ulimit -Sn 256`.
func TestGoRaisesOpenFilesAtStart(t *testing.T) {
	if os.Getenv("SYSINFO_HELPER") == "1" {
		env := Collect()
		soft, hard, err := RaiseOpenFilesLimit()
		child, _ := exec.Command("sh", "-c", "ulimit -Sn").Output()
		fmt.Printf("%d %d %d %d %v %s\n", env.OpenFilesSoft, env.OpenFilesHard, soft, hard, err, child)
		return
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", `ulimit -Sn 256 && ulimit -Sn && exec "$0" -test.run='^TestGoRaisesOpenFilesAtStart$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "SYSINFO_HELPER=1")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	f := strings.Fields(string(out))
	require.GreaterOrEqual(t, len(f), 7, "%s", out)
	n := func(i int) int64 {
		v, err := strconv.ParseInt(f[i], 10, 64)
		require.NoError(t, err, "%s", out)
		return v
	}
	require.Equal(t, int64(256), n(0), "the shell lowered its soft limit")
	hard := n(2)
	if hard <= 257 {
		t.Skipf("hard limit %d: nothing to raise", hard)
	}
	assert.Equal(t, hard-1, n(1), "Go set soft = hard - 1 at start-up: %s", out)
	assert.Equal(t, hard, n(3), "RaiseOpenFilesLimit: soft = hard: %s", out)
	assert.Equal(t, hard, n(4), "%s", out)
	assert.Equal(t, "<nil>", f[5])
	assert.Equal(t, hard, n(6), "a child inherits the raised limit: %s", out)
}

// rtattr is one netlink route attribute, padded to 4 bytes.
func rtattr(typ uint16, val []byte) []byte {
	l := 4 + len(val)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], val)
	return b
}

// routeMsg is an RTM_NEWROUTE message as a route dump carries it: dst/bits
// of type typ, with the quickack metric unless quick < 0.
func routeMsg(dst []byte, bits, typ uint8, quick int) []byte {
	body := []byte{syscall.AF_INET, bits, 0, 0, 255, 2, 254, typ, 0, 0, 0, 0} // struct rtmsg
	if dst != nil {
		body = append(body, rtattr(syscall.RTA_DST, dst)...)
	}
	if quick >= 0 {
		v := binary.NativeEndian.AppendUint32(nil, uint32(quick))
		metrics := append(rtattr(2 /* RTAX_MTU */, binary.NativeEndian.AppendUint32(nil, 65536)), rtattr(unix.RTAX_QUICKACK, v)...)
		body = append(body, rtattr(syscall.RTA_METRICS, metrics)...)
	}
	hdr := make([]byte, syscall.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(hdr[0:], uint32(len(hdr)+len(body)))
	binary.NativeEndian.PutUint16(hdr[4:], syscall.RTM_NEWROUTE)
	return append(hdr, body...)
}

func TestParseLoopbackQuickACK(t *testing.T) {
	net8, lo := []byte{127, 0, 0, 0}, []byte{127, 0, 0, 1}
	dump := func(msgs ...[]byte) []byte { return bytes.Join(msgs, nil) }
	for _, tc := range []struct {
		name string
		dump []byte
		want bool
	}{
		{"the kernel's routes", dump(routeMsg(net8, 8, syscall.RTN_LOCAL, -1), routeMsg(lo, 32, syscall.RTN_LOCAL, -1),
			routeMsg([]byte{127, 255, 255, 255}, 32, syscall.RTN_BROADCAST, -1)), false},
		{"both local routes quickack", dump(routeMsg(net8, 8, syscall.RTN_LOCAL, 1), routeMsg(lo, 32, syscall.RTN_LOCAL, 1)), true},
		{"127.0.0.1's own route wins", dump(routeMsg(lo, 32, syscall.RTN_LOCAL, -1), routeMsg(net8, 8, syscall.RTN_LOCAL, 1)), false},
		{"only the /8", dump(routeMsg(net8, 8, syscall.RTN_LOCAL, 1)), true},
		{"quickack 0", dump(routeMsg(lo, 32, syscall.RTN_LOCAL, 0)), false},
		{"another address", dump(routeMsg([]byte{10, 0, 0, 1}, 32, syscall.RTN_LOCAL, 1)), false},
		{"not a local route", dump(routeMsg(nil, 0, syscall.RTN_UNICAST, 1)), false},
		{"no routes", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLoopbackQuickACK(tc.dump)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := parseLoopbackQuickACK(routeMsg(lo, 32, syscall.RTN_LOCAL, 1)[:20])
	assert.Error(t, err, "a truncated dump")
	assert.False(t, metricQuickACK([]byte{3, 0, 15, 0}), "an attribute shorter than its header")
}

// The machine's own routes parse (whatever they say).
func TestLoopbackQuickACKReads(t *testing.T) {
	b, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_INET)
	if err != nil {
		t.Skipf("no route dump here: %v", err)
	}
	_, err = parseLoopbackQuickACK(b)
	require.NoError(t, err)
}
