package results

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shardDocs returns the 3 shards of one run of 15 rooms (5 each), shard i
// starting i×100 ms late and lasting 40 s.
func shardDocs(t *testing.T) []*Document {
	t.Helper()
	t0 := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	var docs []*Document
	for i := 0; i < 3; i++ {
		d := fullDocument(t)
		d.RunID = "run-abc"
		d.Source = fmt.Sprintf("shard%d.json", i)
		d.Shard = &Shard{Index: i, Count: 3, Rooms: []int{5*i + 1, 5*i + 2, 5*i + 3, 5*i + 4, 5*i + 5}}
		d.Passed, d.Interrupted, d.Discarded = true, false, false
		n := int64(i + 1)
		d.Counts = Counts{Sent: 10000 * n, Received: 190000 * n, Total: 200000 * n,
			ExpectedSent: 10000 * n, ExpectedTotal: 200000 * n, Confirms: 10000 * n}
		d.Started = t0.Add(time.Duration(i) * time.Second)
		d.Ended = t0.Add(time.Minute + time.Duration(i)*time.Second)
		d.TimedStart = t0.Add(10*time.Second + time.Duration(i)*100*time.Millisecond)
		d.TimedEnd = d.TimedStart.Add(40 * time.Second)
		d.ElapsedSeconds = 40
		d.SetupSeconds = float64(i + 1)
		d.Score, _ = MarkScore(d.Counts.Total, 40000)
		d.Throughput = float64(d.Counts.Total) / 40
		h := NewHistogram()
		for v := int64(0); v < 1000*n; v++ {
			require.NoError(t, h.RecordValue(1000+v*n))
		}
		e, err := EncodeHistogram(h)
		require.NoError(t, err)
		d.Latency = map[string]*Histogram{LatencyDelivery: e}
		if i == 1 {
			d.Latency[LatencyTurn] = e
		}
		d.Timeline = &Timeline{IntervalSeconds: 1, Sent: []int64{n, n}, Received: []int64{10 * n, 10 * n}}
		d.Connections = Connections{Attempted: 100 * n, Established: 100 * n, Peak: 100 * n}
		d.Failures = nil
		d.Client = Usage{CPUUserSeconds: float64(n), CPUSystemSeconds: 0.5 * float64(n), PeakRSSBytes: 10 << 20 * n}
		d.Server = nil
		d.Paced = &Paced{ConcurrentUsers: 100 * n, InPerSecond: 10 * float64(n), OutPerSecond: 20 * float64(n)}
		d.Churn = &Churn{Sequences: 50 * n, First: e, Leaks: Leaks{LeakedFDs: n}}
		docs = append(docs, d)
	}
	docs[1].Server = &ServerUsage{Source: "metrics", CPUSeconds: 30, CPUPercent: 75, RSSStartBytes: 1, RSSEndBytes: 2, CPUPerMessageMicros: 75, Engine: "epoll"}
	return docs
}

func TestMergeShards(t *testing.T) {
	docs := shardDocs(t)
	t0 := docs[0].Started
	docs[2].Failures = []Failure{{Kind: FailStall, Count: 2, Example: "later stall", At: t0.Add(30 * time.Second)}}
	docs[1].Failures = []Failure{
		{Kind: FailRefused, Count: 1, Example: "refused", At: t0.Add(20 * time.Second)},
		{Kind: FailStall, Count: 1, Example: "first stall", At: t0.Add(25 * time.Second)},
	}
	docs[2].Passed = false
	docs[0].Interrupted = true

	m, err := Merge([]*Document{docs[2], docs[0], docs[1]}) // any order
	require.NoError(t, err)
	require.NoError(t, m.Validate())

	assert.Nil(t, m.Shard)
	assert.Equal(t, 3, m.Shards)
	assert.Equal(t, "run-abc", m.RunID)
	assert.Equal(t, "shard0.json", m.Source)
	assert.Equal(t, Counts{Sent: 60000, Received: 1140000, Total: 1200000, ExpectedSent: 60000,
		ExpectedTotal: 1200000, Confirms: 60000}, m.Counts)
	assert.Equal(t, Connections{Attempted: 600, Established: 600, Peak: 600}, m.Connections)
	assert.Equal(t, docs[0].Started, m.Started)
	assert.Equal(t, docs[2].Ended, m.Ended)
	assert.Equal(t, docs[0].TimedStart, m.TimedStart)
	assert.Equal(t, docs[2].TimedEnd, m.TimedEnd)
	assert.Equal(t, 40.2, m.ElapsedSeconds) // the union: 0.2 s more than one shard
	assert.Equal(t, 3.0, m.SetupSeconds)
	assert.False(t, m.Passed)
	assert.True(t, m.Interrupted)
	assert.Zero(t, m.Score, "a failed run has no score")
	assert.InDelta(t, 1200000/40.2, m.Throughput, 1e-6)

	assert.Equal(t, []Failure{
		{Kind: FailRefused, Count: 1, Example: "refused", At: t0.Add(20 * time.Second)},
		{Kind: FailStall, Count: 3, Example: "first stall", At: t0.Add(25 * time.Second)},
	}, m.Failures)

	require.Contains(t, m.Latency, LatencyDelivery)
	assert.Equal(t, int64(6000), m.Latency[LatencyDelivery].Count)
	assert.Equal(t, int64(2000), m.Latency[LatencyTurn].Count)
	want, err := MergeHistograms(docs[0].Latency[LatencyDelivery], docs[1].Latency[LatencyDelivery], docs[2].Latency[LatencyDelivery])
	require.NoError(t, err)
	assert.Equal(t, want, m.Latency[LatencyDelivery])

	assert.Equal(t, &Timeline{IntervalSeconds: 1, Sent: []int64{6, 6}, Received: []int64{60, 60}}, m.Timeline)

	assert.InDelta(t, 6.0, m.Client.CPUUserSeconds, 1e-9)
	assert.InDelta(t, 3.0, m.Client.CPUSystemSeconds, 1e-9)
	assert.Equal(t, int64(30<<20), m.Client.PeakRSSBytes)
	assert.InDelta(t, 9.0/1200000*1e6, m.Client.CPUPerMessageMicros, 1e-9)

	require.NotNil(t, m.Server)
	assert.Equal(t, 30.0, m.Server.CPUSeconds)
	assert.Equal(t, "epoll", m.Server.Engine, "the server's engine is kept")
	assert.InDelta(t, 25.0, m.Server.CPUPerMessageMicros, 1e-9, "recomputed over the merged total")
	assert.Equal(t, 75.0, docs[1].Server.CPUPerMessageMicros, "the shard is not modified")

	assert.Equal(t, &Paced{ConcurrentUsers: 600, InPerSecond: 60, OutPerSecond: 120}, m.Paced)
	require.NotNil(t, m.Churn)
	assert.Equal(t, int64(300), m.Churn.Sequences)
	assert.InDelta(t, 300/40.2, m.Churn.SequencesPerSecond, 1e-9)
	assert.Equal(t, int64(3), m.Churn.LeakedFDs)
	assert.Equal(t, int64(6000), m.Churn.First.Count)

	// The merged document is a valid document.
	path := t.TempDir() + "/merged.json"
	require.NoError(t, WriteFile(path, m))
	back, err := ReadFile(path)
	require.NoError(t, err)
	back.Source = m.Source
	assert.Equal(t, m, back)
}

// TestMergeServerEngine: the server's engine comes from any shard that
// read it, when the shard whose usage is kept did not.
func TestMergeServerEngine(t *testing.T) {
	docs := shardDocs(t)
	docs[1].Server.Engine = ""
	docs[2].Server = &ServerUsage{Source: "metrics", CPUSeconds: 31, Engine: "uring"}
	m, err := Merge(docs)
	require.NoError(t, err)
	require.NotNil(t, m.Server)
	assert.Equal(t, 30.0, m.Server.CPUSeconds)
	assert.Equal(t, "uring", m.Server.Engine)
}

func TestMergeScore(t *testing.T) {
	docs := shardDocs(t)
	for _, d := range docs { // turn-taking: the kind with Mark's score
		d.Paced, d.Churn = nil, nil
	}
	m, err := Merge(docs)
	require.NoError(t, err)
	assert.True(t, m.Passed)
	score, ok := MarkScore(1200000, 40200)
	require.True(t, ok)
	assert.Equal(t, score, m.Score)
	assert.Equal(t, int64(29851), m.Score)

	docs[0].Paced = &Paced{}
	m, err = Merge(docs)
	require.NoError(t, err)
	assert.Zero(t, m.Score, "paced: no Mark score")
}

func TestMergeOrderIndependent(t *testing.T) {
	docs := shardDocs(t)
	docs[0].Failures = []Failure{{Kind: FailReset, Count: 1, Example: "x"}}
	docs[2].Failures = []Failure{{Kind: FailTimeout, Count: 1, Example: "y"}}
	want, err := Merge(docs)
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 10; i++ {
		p := append([]*Document(nil), docs...)
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		got, err := Merge(p)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestMergeMissingShard(t *testing.T) {
	docs := shardDocs(t)
	m, err := Merge([]*Document{docs[0], docs[2]})
	require.NoError(t, err)
	assert.False(t, m.Passed)
	assert.Zero(t, m.Score)
	assert.Equal(t, 2, m.Shards)
	require.Len(t, m.Failures, 1)
	assert.Equal(t, FailShard, m.Failures[0].Kind)
	assert.Contains(t, m.Failures[0].Example, "1 shard(s) [1] of 3")

	// A lone shard of a huge run (found by FuzzRead): bounded work.
	d := fullDocument(t)
	d.Shard = &Shard{Index: 5, Count: 50_000_000}
	m, err = Merge([]*Document{d})
	require.NoError(t, err)
	require.Len(t, m.Failures, 2)
	assert.Equal(t, int64(49_999_999), m.Failures[1].Count)
	assert.Contains(t, m.Failures[1].Example, "49999999 shard(s) [0 1 2 3 4 6 7 8 9 10 ...] of 50000000")
}

func TestMergeNoTimedPhase(t *testing.T) {
	docs := shardDocs(t)
	for _, d := range docs {
		d.TimedStart, d.TimedEnd = time.Time{}, time.Time{}
	}
	docs[1].ElapsedSeconds = 41.5
	m, err := Merge(docs)
	require.NoError(t, err)
	assert.Equal(t, 41.5, m.ElapsedSeconds)
}

func TestMergeErrors(t *testing.T) {
	other := shardDocs(t)
	for _, tc := range []struct {
		name string
		docs func() []*Document
		msg  string
	}{
		{"none", func() []*Document { return nil }, "no documents"},
		{"nil", func() []*Document { return []*Document{nil} }, "nil"},
		{"run ids", func() []*Document {
			d := shardDocs(t)
			d[1].RunID = "other"
			return d
		}, `shard1.json has run id "other"`},
		{"duplicate index", func() []*Document {
			d := shardDocs(t)
			d[2].Shard.Index = 0
			return d
		}, "shard 0 twice (shard0.json and shard2.json)"},
		{"count", func() []*Document {
			d := shardDocs(t)
			d[2].Shard.Count = 4
			return d
		}, "shard 2 of 4"},
		{"not a shard", func() []*Document {
			d := shardDocs(t)
			d[1].Shard = nil
			return d
		}, "not a shard"},
		{"overflow", func() []*Document {
			d := shardDocs(t)
			for _, x := range d {
				x.Counts.Sent, x.Counts.Received, x.Counts.Total = 1<<62, 0, 1<<62
			}
			return d
		}, "counts overflow"},
		{"failure overflow", func() []*Document {
			d := shardDocs(t)
			for _, x := range d {
				x.Failures = []Failure{{Kind: FailReset, Count: 1 << 62}}
			}
			return d
		}, "counts overflow"},
		{"float overflow", func() []*Document {
			d := shardDocs(t)
			for _, x := range d {
				x.Client.CPUUserSeconds = 1e308
			}
			return d
		}, "merged document is invalid"},
		{"histogram", func() []*Document {
			d := shardDocs(t)
			d[1].Latency[LatencyDelivery] = &Histogram{HDR: "xx", Count: 1}
			return d
		}, `latency "delivery"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.docs())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	_ = other
}

func TestMergeSingle(t *testing.T) {
	d := fullDocument(t)
	d.Shard = nil
	m, err := Merge([]*Document{d})
	require.NoError(t, err)
	assert.Equal(t, d, m)
	assert.NotSame(t, d, m)
}

func TestGroupRunsAndMergeAll(t *testing.T) {
	shards := shardDocs(t)
	single := fullDocument(t)
	single.Shard, single.RunID = nil, "single"
	lone := fullDocument(t)
	lone.Shard, lone.RunID = &Shard{Index: 0, Count: 1}, "lone"
	dup1, dup2 := fullDocument(t), fullDocument(t)
	dup1.Shard, dup2.Shard = nil, nil
	dup1.RunID, dup2.RunID = "dup", "dup"

	docs := []*Document{shards[1], single, shards[0], dup1, nil, lone, shards[2], dup2}
	groups := GroupRuns(docs)
	require.Len(t, groups, 4)
	assert.Equal(t, []*Document{shards[1], shards[0], shards[2]}, groups[0])
	assert.Equal(t, []*Document{single}, groups[1])
	assert.Equal(t, []*Document{dup1, dup2}, groups[2])
	assert.Equal(t, []*Document{lone}, groups[3])

	merged, errs := MergeAll(docs)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `run dup`)
	require.Len(t, merged, 3)
	assert.Equal(t, "run-abc", merged[0].RunID)
	assert.Equal(t, 3, merged[0].Shards)
	assert.Same(t, single, merged[1])
	assert.Equal(t, "lone", merged[2].RunID)
	assert.Nil(t, merged[2].Shard)
	assert.Equal(t, 1, merged[2].Shards)
}

// TCP counters are a network namespace's: shards of one host report the
// same counters (counted once), shards of other hosts add theirs.
func TestMergeTCPCountersPerHost(t *testing.T) {
	docs := shardDocs(t)
	hosts := []string{"node-a", "node-a", "node-b"}
	for i, d := range docs {
		d.Environment.Hostname = hosts[i]
		n := int64(i + 1)
		d.TCP = &TCPCounters{SegmentsIn: 1000 * n, SegmentsOut: 1000 * n, Retransmitted: n, DelayedACKs: 10 * n, LossProbes: 2 * n}
	}
	m, err := Merge(docs)
	require.NoError(t, err)
	require.NotNil(t, m.TCP)
	// node-a counted once (shard 0's figures), node-b's added.
	assert.Equal(t, TCPCounters{SegmentsIn: 4000, SegmentsOut: 4000, Retransmitted: 4, DelayedACKs: 40, LossProbes: 8}, *m.TCP)
	require.NoError(t, m.Validate())

	for _, d := range docs {
		d.TCP = nil
	}
	m, err = Merge(docs)
	require.NoError(t, err)
	assert.Nil(t, m.TCP, "no shard measured TCP")
}

func TestMergeIntegrity(t *testing.T) {
	docs := shardDocs(t)
	docs[0].Integrity = &Integrity{Reordered: 5, MaxDisplacement: 2, ReceiversReordered: 3, Receivers: 100, SenderReordered: 1,
		FirstReordered: "Mark19 in Room3: chat 34 of the room (Mark14's) arrived after chat 35 (1 later)"}
	docs[1].Integrity = &Integrity{Lost: 2, Duplicated: 1, Reordered: 7, MaxDisplacement: 4, ReceiversReordered: 2, Receivers: 100,
		FirstReordered: "Mark7 in Room6: ...", Outside: &Outside{Chats: 19, Exited: 19}}
	docs[2].Integrity = &Integrity{Corrupted: 3, Receivers: 100, Outside: &Outside{Entered: 20}}
	m, err := Merge(docs)
	require.NoError(t, err)
	require.NotNil(t, m.Integrity)
	assert.Equal(t, Integrity{Lost: 2, Duplicated: 1, Corrupted: 3, Reordered: 12, MaxDisplacement: 4, ReceiversReordered: 5,
		Receivers: 300, SenderReordered: 1, FirstReordered: docs[0].Integrity.FirstReordered,
		Outside: &Outside{Chats: 19, Entered: 20, Exited: 19}}, *m.Integrity)
	assert.True(t, m.Integrity.Failed())
	share, ok := m.Integrity.ReorderedShare()
	assert.True(t, ok)
	assert.InDelta(t, 5.0/3, share, 1e-9)
	require.NoError(t, m.Validate())
}

func TestIntegrityFailedAndValidate(t *testing.T) {
	var g *Integrity
	assert.False(t, g.Failed(), "no ledger")
	assert.False(t, (&Integrity{Reordered: 9, Receivers: 20}).Failed(), "reordering alone passes")
	assert.True(t, (&Integrity{Reordered: 9, Receivers: 20, StrictOrder: true}).Failed())
	d := fullDocument(t)
	d.Integrity = &Integrity{Lost: -1, Receivers: 4, ReceiversReordered: 5}
	err := d.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "integrity.lost is negative")
	assert.Contains(t, err.Error(), "integrity.receivers_reordered 5 is not between 0 and receivers 4")
}
