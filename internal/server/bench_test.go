package server

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// Both benchmarks run once per engine (sub-benchmarks goroutine and
// epoll; -bench 'ServerMemory/epoll' picks one).
//
// BenchmarkMarkServerCPU runs a Mark-like load (turn-taking, loopback)
// against a server in a child process and reports the server's CPU time
// (user+system, from /proc) per counted message, where a message is one
// chat sent or one indication received, as Mark counts them. The issue's
// bound is 3.5 µs at 50 rooms × 20 users × 100 messages:
//
//	go test -run '^$' -bench MarkServerCPU -benchtime 3x ./internal/server
//
// VOLANOGO_BENCH_ROOMS and VOLANOGO_BENCH_COUNT change the rooms and the
// messages per user (the scalability steps: 15 rooms against 950).
func BenchmarkMarkServerCPU(b *testing.B) { forEnginesB(b, benchMarkServerCPU) }

func benchMarkServerCPU(b *testing.B, engine string) {
	rooms, users, count := envInt("VOLANOGO_BENCH_ROOMS", 50), 20, envInt("VOLANOGO_BENCH_COUNT", 100)
	child := startChild(b, engine, 0)
	var msgs int64
	var cpu, wall time.Duration
	b.ResetTimer()
	for range b.N {
		before := child.cpu(b)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		res, err := runMark(ctx, child.addr, rooms, users, count)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if res.integrity != 0 || res.sent != int64(rooms*users*count) {
			b.Fatalf("sent %d, out of turn %d", res.sent, res.integrity)
		}
		cpu += child.cpu(b) - before
		wall += res.elapsed
		msgs += res.sent + res.received
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(msgs), "server-µs/msg")
	b.ReportMetric(float64(msgs)/wall.Seconds(), "msgs/s")
}

// BenchmarkServerMemory opens VOLANOGO_BENCH_CONNS connections (default
// 5,000) in rooms of 20, each past Access and EnterRoom, to a server in a
// child process, and reports the growth of the server's resident memory
// per connection, measured after a garbage collection on both sides of
// the connections. The bound is 8 KB per connection at 19,000:
//
//	VOLANOGO_BENCH_CONNS=19000 go test -run '^$' -bench ServerMemory -benchtime 1x ./internal/server
func BenchmarkServerMemory(b *testing.B) { forEnginesB(b, benchServerMemory) }

func benchServerMemory(b *testing.B, engine string) {
	n := envInt("VOLANOGO_BENCH_CONNS", 5000)
	for range b.N {
		child := startChild(b, engine, 0)
		child.gc(b)
		before := child.rss(b)
		conns := make([]net.Conn, 0, n)
		for i := range n {
			room := "Room" + strconv.Itoa(i/20+1)
			nc, err := net.DialTimeout("tcp", child.addr, 10*time.Second)
			if err != nil {
				b.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, nc)
			pb, _ := markAccess(room).AppendPacket(nil)
			pb, _ = (&protocol.EnterRoom{Type: protocol.Request, Profile: "This is the profile for Mark" + strconv.Itoa(i%20+1) + " in " + room + ".",
				RoomName: room, UserName: "Mark" + strconv.Itoa(i%20+1)}).AppendPacket(pb)
			if _, err := nc.Write(pb); err != nil {
				b.Fatal(err)
			}
		}
		// wait until every connection has its EnterRoom confirm
		for i, nc := range conns {
			rd := protocol.NewReader(nc, 0)
			_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			for {
				f, err := rd.Next()
				if err != nil {
					b.Fatalf("connection %d: %v", i, err)
				}
				if f.ID == protocol.IDEnterRoom && f.Type == protocol.Confirm {
					break
				}
			}
		}
		child.gc(b)
		after := child.rss(b)
		b.ReportMetric(float64(after-before)/float64(n), "server-bytes/conn")
		b.ReportMetric(float64(n), "conns")
		b.Log(child.stderr.String())
		for _, nc := range conns {
			nc.Close()
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
