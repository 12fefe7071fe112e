package server

import (
	"context"
	"testing"
	"time"
)

// BenchmarkMarkServerCPU runs a Mark-like load (turn-taking, loopback)
// against a server in a child process and reports the server's CPU time
// (user+system, from /proc) per counted message, where a message is one
// chat sent or one indication received, as Mark counts them. The issue's
// bound is 3.5 µs at 50 rooms × 20 users × 100 messages:
//
//	go test -run '^$' -bench MarkServerCPU -benchtime 3x ./internal/server
func BenchmarkMarkServerCPU(b *testing.B) {
	rooms, users, count := 50, 20, 100
	child := startChild(b, 0)
	var msgs int64
	var cpu, wall time.Duration
	b.ResetTimer()
	for range b.N {
		before := child.cpu(b)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
