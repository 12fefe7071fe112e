package results

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fullDocument returns a document with every field set.
func fullDocument(t testing.TB) *Document {
	t.Helper()
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	testHistogramsOnce.Do(func() {
		h := NewHistogram()
		for i := int64(1); i <= 1000; i++ {
			require.NoError(t, h.RecordValue(i*1000))
		}
		testHistograms[0], testHistogramsErr = EncodeHistogram(h)
		h2 := NewHistogram()
		require.NoError(t, h2.RecordValue(5_000_000))
		if testHistogramsErr == nil {
			testHistograms[1], testHistogramsErr = EncodeHistogram(h2)
		}
	})
	require.NoError(t, testHistogramsErr)
	// Copies: a test may modify its document's histograms.
	enc, enc2 := new(Histogram), new(Histogram)
	*enc, *enc2 = *testHistograms[0], *testHistograms[1]
	enc3 := new(Histogram)
	*enc3 = *enc2
	return &Document{
		Schema: SchemaVersion,
		RunID:  "0123456789abcdef",
		Shard: &Shard{Index: 1, Count: 3, StartAt: start.Add(-time.Second),
			ClockOffsetSeconds: 0.002, Rooms: []int{2, 5}},
		Shards:      0,
		Label:       "go1.26 linux/amd64",
		Tool:        Tool{Name: "volanogo", Version: "v0.1.0", Commit: "abc123", GoVersion: "go1.26.0"},
		CommandLine: []string{"volanogo", "load", "-rooms", "15"},
		Config: Config{Scenario: ScenarioTurns, Transport: "tcp", Host: "localhost", Port: 8000,
			URL: "ws://localhost:8000/ws", StartRoom: 1, Rooms: 15, Users: 20, Count: 100,
			PauseSeconds: 0.5, DurationSeconds: 60, ConnectRate: 100, ConnectConcurrency: 8,
			StallTimeoutSeconds: 30, SLOSeconds: 1, Bind: []string{"127.0.0.2"}, ServerCPUs: 2,
			ServerCommand: []string{"volanogo", "serve", "-port", "{port}"}},
		Environment: Environment{Hostname: "box", OS: "linux", Arch: "amd64", Kernel: "6.8.0",
			Distribution: "Debian GNU/Linux 13", CPUModel: "Some CPU", CPUs: 2, MemoryBytes: 8 << 30,
			GoVersion: "go1.26.0", GOMAXPROCS: 2, OpenFilesSoft: 20000, OpenFilesHard: 20000,
			EphemeralPorts: "32768 60999",
			Floor: []Floor{{Engine: "epoll", Rooms: 15, Users: 20, Connections: 300, Count: 100,
				Messages: 600000, MessageBytes: 80, ElapsedSeconds: 4, Throughput: 150000,
				ServerCPUSeconds: 3, ClientCPUSeconds: 2.4, ServerCPUPerMessageMicros: 5,
				ClientCPUPerMessageMicros: 4, When: start.Add(-time.Minute)}}},
		Step: 15, Run: 2, Discarded: true,
		Started: start, Ended: start.Add(50 * time.Second),
		TimedStart: start.Add(5 * time.Second), TimedEnd: start.Add(45*time.Second + 115*time.Millisecond),
		SetupSeconds: 5, ElapsedSeconds: 40.115,
		Passed: true, Interrupted: true,
		Counts: Counts{Sent: 100000, Received: 1900000, Total: 2000000, ExpectedSent: 100000,
			ExpectedTotal: 2000000, Confirms: 100000},
		Score: 49857, Throughput: 2000000 / 40.115,
		Latency:     map[string]*Histogram{LatencyDelivery: enc, LatencyTurn: enc2},
		Timeline:    &Timeline{IntervalSeconds: 1, Sent: []int64{1, 2, 3}, Received: []int64{19, 38, 57}},
		Connections: Connections{Attempted: 300, Established: 299, Peak: 299},
		Failures: []Failure{{Kind: FailRefused, Count: 1, Example: "dial tcp: connection refused",
			At: start.Add(time.Second)}},
		Client: Usage{CPUUserSeconds: 3.5, CPUSystemSeconds: 1.5, PeakRSSBytes: 50 << 20,
			CPUPerMessageMicros: 2.5},
		Server: &ServerUsage{Source: "metrics", CPUSeconds: 7, CPUPercent: 175, RSSStartBytes: 10 << 20,
			RSSEndBytes: 20 << 20, CPUPerMessageMicros: 3.5, CPUs: 2, GOMAXPROCS: 2,
			OpenConnections: 1, Goroutines: 10, OpenFDs: 12},
		Paced: &Paced{ConcurrentUsers: 300, InPerSecond: 300, OutPerSecond: 600, Broken: true, Reason: "p99 over SLO"},
		Churn: &Churn{Sequences: 1000, SequencesPerSecond: 25, First: enc3,
			Leaks: Leaks{LeakedConnections: 1, LeakedGoroutines: 2, LeakedFDs: 3}},
	}
}

var (
	testHistogramsOnce sync.Once
	testHistograms     [2]*Histogram
	testHistogramsErr  error
)
