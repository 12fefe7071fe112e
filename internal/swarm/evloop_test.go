//go:build linux

package swarm

import (
	"context"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestEngineEpoll runs the turn-taking and paced tests again on the epoll
// engine: the same counts, integrity verdicts, failures and clean ends.
func TestEngineEpoll(t *testing.T) {
	testEngine = EngineEpoll
	defer func() { testEngine = EngineGoroutine }()
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"TurnTakingCounts", TestTurnTakingCounts},
		{"DurationTurnTaking", TestDurationTurnTaking},
		{"CountAndDuration", TestCountAndDuration},
		{"ServerClosesMidRun", TestServerClosesMidRun},
		{"Stall", TestStall},
		{"Interrupted", TestInterrupted},
		{"BatchReads", TestBatchReads},
		{"BatchReadsIntegrityDrop", TestBatchReadsIntegrityDrop},
		{"IntegrityDrop", TestIntegrityDrop},
		{"IntegrityDuplicate", TestIntegrityDuplicate},
		{"IntegrityCorrupt", TestIntegrityCorrupt},
		{"ReorderedPasses", TestReorderedPasses},
		{"ReorderedStrictFails", TestReorderedStrictFails},
		{"OutsideUsers", TestOutsideUsers},
		{"OutsidePackets", TestOutsidePackets},
		{"OutsideOther", TestOutsideOther},
		{"StallInFlight", TestStallInFlight},
		{"FanoutDelayedReceiver", TestFanoutDelayedReceiver},
		{"Paced", TestPaced},
		{"PacedOutBehind", TestPacedOutBehind},
		{"PacedCount", TestPacedCount},
		{"PacedLoss", TestPacedLoss},
		{"PacedDuplicate", TestPacedDuplicate},
		{"PacedReordered", TestPacedReordered},
		{"PacedReorderedStrictFails", TestPacedReorderedStrictFails},
		{"PacedServerCloses", TestPacedServerCloses},
		{"PacedInterrupted", TestPacedInterrupted},
		{"BrokerTurnTaking", TestBrokerTurnTaking},
		{"BrokerPrefixQoS", TestBrokerPrefixQoS},
		{"BrokerPaced", TestBrokerPaced},
		{"BrokerRestart", TestBrokerRestart},
	} {
		t.Run(tc.name, tc.f)
	}
}

// TestEpollNoGoroutinePerUser: in the timed phase of the epoll engine,
// the users have no goroutines of their own (the in-process server has
// one per connection under either engine), turn-taking or paced, and
// every descriptor the loops took is closed at the end.
func TestEpollNoGoroutinePerUser(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	fds0 := openFDs(t)
	during := func(engine string, pause time.Duration) int {
		cfg := tcpConfig(s.Addr().String())
		cfg.Engine = engine
		cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 5, 20, 0, pause
		cfg.Duration = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		obs := &startObserver{started: make(chan struct{})}
		n := make(chan int, 1)
		go func() {
			<-obs.started
			deadline := time.Now().Add(10 * time.Second)
			for obs.live().Snapshot().Sent < 200 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			n <- runtime.NumGoroutine()
			cancel()
		}()
		d := runWith(t, ctx, cfg, obs)
		assert.True(t, d.Interrupted)
		assert.Positive(t, d.Counts.Sent)
		return <-n
	}
	for _, pause := range []time.Duration{0, 10 * time.Millisecond} {
		g, e := during(EngineGoroutine, pause), during(EngineEpoll, pause)
		assert.LessOrEqual(t, e, g-90, "pause %s, 100 users: %d goroutines in all on goroutines, %d on epoll", pause, g, e)
		assert.Equal(t, fds0, openFDs(t), "descriptors left open")
	}
}

// TestEpollCompletes: users that leave their rooms as they should are
// closed by the loops' hand-back, with exact totals, turn-taking or paced.
func TestEpollCompletes(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	fds0 := openFDs(t)
	for _, tc := range []struct {
		pause time.Duration
		count int
	}{{0, 30}, {100 * time.Millisecond, 8}} {
		cfg := tcpConfig(s.Addr().String())
		cfg.Engine, cfg.Loops = EngineEpoll, 3
		cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 4, 20, tc.count, tc.pause
		d := mustPass(t, cfg)
		sent := int64(4 * 20 * tc.count)
		assert.Equal(t, sent, d.Counts.Sent)
		assert.Equal(t, sent*19, d.Counts.Received)
		assert.Equal(t, sent, d.Counts.Confirms)
		assert.Equal(t, fds0, openFDs(t), "descriptors left open")
		if tc.pause > 0 {
			// (Not the SLO verdict: under -race on a busy machine 800
			// chats a second to 19 receivers each may be late.)
			require.NotNil(t, d.Paced)
			assert.Equal(t, sent*19, d.Latency[results.LatencyDeliveryScheduled].Count)
			assert.Equal(t, sent, d.Latency[results.LatencyFanoutLast].Count)
		}
	}
}

func TestEngineSpecErrors(t *testing.T) {
	tcp := Target{Transport: TransportTCP, Addr: "127.0.0.1:1"}
	ws := Target{Transport: TransportWS, URL: "ws://127.0.0.1:1/chat"}
	for _, tc := range []struct {
		spec   Spec
		target Target
		want   string
	}{
		{Spec{Rooms: []int{1}, Count: 1, Engine: "kqueue"}, tcp, `engine "kqueue" is not goroutine or epoll`},
		{Spec{Rooms: []int{1}, Count: 1, Engine: EngineEpoll}, ws, "engine epoll: TCP only"},
		{Spec{Rooms: []int{1}, Count: 3, Engine: EngineEpoll, Pause: time.Second, Scenario: results.ScenarioStorm}, tcp, "engine epoll: turns and paced only (a storm's users reconnect"},
		{Spec{Rooms: []int{1}, Count: 3, Engine: EngineEpoll, Scenario: results.ScenarioChurn}, tcp, "engine epoll: turns and paced only (churn connects"},
		{Spec{Rooms: []int{1}, Count: 1, Loops: 2}, tcp, "loops: only with engine epoll"},
	} {
		_, err := Run(context.Background(), tc.spec, tc.target, &observer{})
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	// The count settles once closes issued by other goroutines are done.
	var n int
	for i := 0; i < 50; i++ {
		ents, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		if len(ents) == n {
			break
		}
		n = len(ents)
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// TestConfirmLowat: what confirmLowat relies on. A TCP socket whose
// receive low-water mark is one byte more than a chat confirm is not
// ready with a confirm alone, and is ready as soon as an indication
// follows it (every indication is longer than a confirm).
func TestConfirmLowat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	rs := &runState{spec: &Spec{Count: 1}, shards: []*histShard{{}}}
	r, err := newRoom(rs, 0, 15, 20)
	require.NoError(t, err)
	require.Less(t, r.confirmSize+1, r.indSize[0])
	rc, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	ready := func() bool {
		var revents int16
		require.NoError(t, rc.Control(func(fd uintptr) {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			_, err := unix.Poll(pfd, 200)
			require.NoError(t, err)
			revents = pfd[0].Revents
		}))
		return revents&unix.POLLIN != 0
	}
	require.NoError(t, rc.Control(func(fd uintptr) {
		require.NoError(t, unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, r.confirmSize+1))
	}))
	_, err = s.Write(make([]byte, r.confirmSize))
	require.NoError(t, err)
	assert.False(t, ready(), "a confirm alone")
	_, err = s.Write(make([]byte, r.indSize[0]))
	require.NoError(t, err)
	assert.True(t, ready(), "a confirm and an indication")
}

// TestFireBehind: a loop behind its schedule sends at most fireBatch
// chats a round, and only those due when the round began, so that it
// goes back to its sockets between batches (it used to send until it had
// caught up, and at 19,000 chats a second never read).
func TestFireBehind(t *testing.T) {
	cfg := tcpConfig("127.0.0.1:1")
	cfg.Rooms, cfg.Users, cfg.Count = 1, 2, 0
	cfg.Pause, cfg.Duration = time.Millisecond, time.Hour
	spec := cfg.spec()
	require.NoError(t, spec.normalize(cfg.Target))
	rs, err := newRunState(&spec, cfg.Target)
	require.NoError(t, err)
	rs.base = nanotime() - int64(time.Second) // 1,000 chats behind each
	rs.startTimeline(time.Now())
	l := &evLoop{}
	var peers []int
	for _, u := range rs.rooms[0].users {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		require.NoError(t, unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20))
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		peers = append(peers, fds[1])
		u.l = &link{fd: fds[0], raw: true, onLoop: true, writeTimeout: time.Second}
		c := &evConn{l: l, u: u, paced: true, hi: -1, next: rs.base}
		l.push(c)
	}
	l.fire()
	sent := int64(0)
	for _, c := range l.timers {
		sent += c.sent
		assert.Less(t, c.next, nanotime(), "still behind")
	}
	assert.Equal(t, int64(fireBatch), sent, "one batch")
	// Every chat sent reached its peer, whole.
	n := 0
	buf := make([]byte, 1<<16)
	for i, fd := range peers {
		m, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			m = 0
		} else {
			require.NoError(t, err)
		}
		u := rs.rooms[0].users[i]
		assert.Zero(t, m%len(u.chat))
		n += m / len(u.chat)
	}
	assert.Equal(t, fireBatch, n)
}

// TestLoopPathAllocs: what an event loop does with each packet of a
// turn-taking user allocates nothing: the wake-up's prefetch, a reader
// lent and given back, the read(2) through the link, the split, the
// chat's view, the ledger, the latency and fan-out records, and the
// user's own chat and write when its turn comes. The stream is a room's
// round: 19 indications, and the confirm of the user's chat.
func TestLoopPathAllocs(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	rs := &runState{spec: &Spec{Count: 1 << 30}, shards: []*histShard{{}}}
	rs.timeline = results.NewTimelineRecorder(time.Now())
	const users = 20
	r, err := newRoom(rs, 0, 1, users)
	require.NoError(t, err)
	u := r.users[2] // Mark3
	u.l = &link{fd: fds[0], raw: true, onLoop: true, writeTimeout: time.Second}
	e := &evEngine{users: make([]atomic.Pointer[user], 1)}
	e.users[0].Store(u)
	l := &evLoop{e: e}
	events := []unix.EpollEvent{{Fd: 0}}

	// A round of the room as the server sends it to Mark3: the chats of
	// Mark1 and Mark2, the confirm of Mark3's own, then Mark4's to
	// Mark20's; at is where each chat's number is.
	var round []byte
	at := make([]int, users)
	for s := 1; s <= users; s++ {
		if s == 3 {
			round, err = (&protocol.Chat{Type: protocol.Confirm, RoomName: r.name}).AppendPacket(round)
			require.NoError(t, err)
			continue
		}
		round, err = (&protocol.Chat{Type: protocol.Indication, RoomName: r.name, UserName: r.users[s-1].name,
			Text: numberedText(s, 1)[:len(MarkText)-1]}).AppendPacket(round)
		require.NoError(t, err)
		at[s-1] = len(round) - (len(MarkText) - 1) + numberDigits + 1
	}
	sink := make([]byte, 4096)
	var j int64
	step := func() {
		j++
		for s := 1; s <= users; s++ {
			k := (j-1)*users + int64(s)
			if s != 3 {
				putNumber(round[at[s-1]:], j)
				// As the sender would have: the slot of its chat.
				slot := &r.slots[k&r.mask]
				slot.sent.Store(nanotime())
				slot.fan.reset()
				slot.k.Store(k)
			}
		}
		if _, err := unix.Write(fds[1], round); err != nil {
			t.Fatal(err)
		}
		l.prefetch(events)
		u.rd = l.reader(u.l, DefaultMaxPacket)
		u.l.mayRead = true
		stop, err := u.pump(u.turnFrame)
		if stop || err != nil || u.rd.Buffered() != 0 {
			t.Fatalf("round %d: stop %v, err %v, %d bytes left", j, stop, err, u.rd.Buffered())
		}
		l.readers = append(l.readers, u.rd)
		u.rd = nil
		if n, err := unix.Read(fds[1], sink); err != nil || n != len(u.chat) {
			t.Fatalf("round %d: read %d bytes of Mark3's chat (%v)", j, n, err)
		}
	}
	step() // warm up: the reader, the shard's histograms
	assert.Zero(t, testing.AllocsPerRun(200, step))
	assert.Nil(t, rs.failures.List())
	assert.Equal(t, j, u.sent)
	assert.Equal(t, j*(users-1), u.counted)
	assert.Zero(t, u.ledger.reordered)
	c := u.rec
	assert.Equal(t, j*(users-1), c.shard.hist(kDelivery).TotalCount()+int64(c.latN[kDelivery]), "every chat timed")
}
