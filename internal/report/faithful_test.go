package report

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// faithfulDocs are the runs of the Volano Report's notes as load now
// records them: a server that refuses past 150 connections (the exact
// Limit and its own cause), one that thrashes past 100 (an estimated
// Limit), one that worked on the second try, a --find-limit search, a
// paced step whose server accepted too slowly, and a crashed server
// quoted by its last error lines; the servers' machines, the network
// path and the GC pauses.
func faithfulDocs(t *testing.T) []*results.Document {
	rng := rand.New(rand.NewPCG(28, 28))
	at := genBase
	next := func() time.Time { at = at.Add(2 * time.Minute); return at }
	server := &results.ServerInfo{Product: "volanogo serve", Version: "v0.5.0", Engine: "epoll",
		Flags: []string{"--max-connections", "150"}, Labels: map[string]string{"site": "lab"},
		Environment: &results.Environment{Hostname: "srv1", OS: "linux", Arch: "amd64", Kernel: "6.1.0-28-amd64",
			Distribution: "Debian GNU/Linux 12 (bookworm)", CPUModel: "Intel Xeon Gold 6338", CPUs: 16, MemoryBytes: 64 << 30,
			GoVersion: "go1.26.8", GOMAXPROCS: 16, OpenFilesSoft: 1 << 20, OpenFilesHard: 1 << 20, TCPCongestion: "cubic"}}
	lan := &results.Network{RTTSeconds: 212e-6, RTTMinSeconds: 180e-6, RTTSamples: 10, Method: "ping", Interface: "eth0", LinkMbps: 100}
	carried := func(n int64) *int64 { return &n }
	var docs []*results.Document
	mk := func(label string, rooms, run int, score float64, f *results.Failure, peak int64) *results.Document {
		p := platforms[0]
		p.label = label
		p.server = []string{"volanogo", "serve", "--listen", "127.0.0.1:{port}"}
		d := turnDoc(t, rng, runSpec{p: p, rooms: rooms, run: run, score: score, at: next(), failure: f, failPeak: peak, count: 100})
		si := *server
		d.ServerInfo = &si
		n := *lan
		d.Network = &n
		if score > 0 {
			d.Connections.Carried = carried(int64(rooms * 20))
			d.Server.GCPauses = 40 + int64(rooms)
			d.Server.GCPauseP99Seconds = 0.000512 * float64(rooms) / 5
			d.Server.GCPauseMaxSeconds = 0.00105 * float64(rooms) / 5
		}
		docs = append(docs, d)
		return d
	}
	for run := 1; run <= 4; run++ {
		mk("maxconn150", 5, run, 52000*noise(rng, run), nil, 0)
	}
	for run := 1; run <= 4; run++ {
		d := mk("maxconn150", 10, run, 0, &results.Failure{Kind: results.FailReset, Count: 1,
			Example: "Mark14 in Room8: waiting for Access confirm: read: connection reset by peer",
			Server:  "4 connections refused (max_connections)"}, 154)
		d.Connections.Carried = carried(150)
	}
	for run := 1; run <= 4; run++ {
		mk("thrash", 5, run, 31000*noise(rng, run), nil, 0).ServerInfo.Flags = nil
	}
	for run := 1; run <= 4; run++ {
		d := mk("thrash", 10, run, 0, &results.Failure{Kind: results.FailStall, Count: 1,
			Example: "Room7 made no progress for 30s: waiting for Mark3, whose last packet was Chat Indication"}, 200)
		d.Connections.Carried = carried(200)
		d.ServerInfo.Flags = nil
	}
	for run := 1; run <= 4; run++ {
		d := mk("retried", 5, run, 44000*noise(rng, run), nil, 0)
		if run == 2 {
			first := mk("retried", 5, run, 0, &results.Failure{Kind: results.FailServerStart, Count: 1,
				Example: "server command \"java COM.volano.Main -port 41877\" exited before listening on 41877",
				Server:  "it exited (exit status 1): java.net.SocketException: Too many open files"}, 0)
			first.Retry = &results.Retry{Attempt: 1, Of: 2, Superseded: true}
			first.Connections.Carried = carried(0)
			d.Retry = &results.Retry{Attempt: 2, Of: 2, Earlier: []results.Failure{first.Failures[0]}}
		}
	}
	for i, probe := range []struct {
		rooms int
		held  bool
	}{{6, true}, {11, false}, {7, true}, {8, false}} {
		for run := 1; run <= 2; run++ {
			var d *results.Document
			if probe.held {
				d = mk("searched", probe.rooms, run, 47000*noise(rng, run), nil, 0)
			} else {
				d = mk("searched", probe.rooms, run, 0, &results.Failure{Kind: results.FailReset, Count: 1,
					Example: "Mark9 in Room3: waiting for Access confirm: read: connection reset by peer",
					Server:  "connections refused (max_connections)"}, int64(probe.rooms*20))
				d.Connections.Carried = carried(150)
			}
			d.Search = &results.Search{Lo: 2, Hi: 20, Users: 20, Probe: i + 1, MaxProbes: 8}
		}
	}
	for run := 1; run <= 2; run++ {
		for _, users := range []int64{5000, 10000} {
			d := pacedDoc(t, rng, users, run, next())
			d.Label = "slowaccept"
			d.Connections.ConnectRate = 498
			if users == 10000 {
				d.Connections.ConnectRate = 412
				d.Paced.Broken, d.Paced.Reason = d.PacedVerdict(time.Second)
			}
			docs = append(docs, d)
		}
	}
	for run := 1; run <= 2; run++ {
		for _, users := range []int64{5000, 10000} {
			// The vendor's private message test: each user one chat a
			// pause to its partner, which echoes it: In:Out 1:2.
			d := pacedDoc(t, rng, users, run, next())
			d.Label = "pairs"
			d.Config.Scenario = results.ScenarioPrivate
			d.Paced.OutPerSecond = 2 * d.Paced.InPerSecond
			d.Counts.Sent = 2 * int64(d.Paced.InPerSecond*60)
			d.Counts.Received = d.Counts.Sent
			d.Counts.Total = 2 * d.Counts.Sent
			d.Connections.Carried = carried(users)
			docs = append(docs, d)
		}
	}
	for run := 1; run <= 4; run++ {
		p := platforms[1]
		p.label = "crashed"
		d := turnDoc(t, rng, runSpec{p: p, rooms: 5, run: run, at: next(), failPeak: 100, count: 100,
			failure: &results.Failure{Kind: results.FailClosed, Count: 100, Example: "Mark1 in Room1: disconnected from server: EOF",
				Server: "it exited (signal: killed): Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space"}})
		d.Connections.Carried = carried(100)
		docs = append(docs, d)
	}
	return docs
}

// TestGoldenFaithful: the footnotes and columns of issue 28 in every
// format: the exact Limit with the server's own cause, "~ N", the second
// try, the search, the slow accept, the server's error lines, both
// machines side by side, the network path, the GC pauses.
func TestGoldenFaithful(t *testing.T) {
	r, err := Build(faithfulDocs(t), DefaultOptions())
	require.NoError(t, err)
	ext := map[string]string{"text": "txt", "markdown": "md", "json": "json", "csv": "csv", "html": "html"}
	for _, f := range []string{"text", "markdown", "json", "csv", "html"} {
		golden(t, "faithful."+ext[f], render(t, r, f))
	}

	limits := map[string]Limit{}
	for _, row := range r.Scale.Rows {
		limits[row.Platform] = row.Limit
	}
	notes := map[string]string{}
	for _, f := range r.Footnotes {
		notes[f.Letter] = f.Text
	}
	limit := func(platform string) (text, note string) {
		l := limits[platform]
		require.Len(t, l.Notes, 1, platform)
		return strings.TrimSuffix(l.Text(), l.Notes[0]), notes[l.Notes[0]]
	}
	text, note := limit("maxconn150")
	assert.Equal(t, "150", text, "exactly what the server carried")
	assert.Contains(t, note, `Failed with "4 connections refused (max_connections)" at the server; the client saw "connection reset by peer"`)
	text, note = limit("thrash")
	assert.Equal(t, "~ 100", text, "the steps bracket the break")
	assert.True(t, limits["thrash"].Estimate)
	assert.Equal(t, int64(200), limits["thrash"].Below)
	assert.Contains(t, note, "a room stalled")
	text, _ = limit("searched")
	assert.Equal(t, "150", text, "160 asked, 150 carried")
	all := strings.Join(func() []string {
		var s []string
		for _, f := range r.Footnotes {
			s = append(s, f.Text)
		}
		return s
	}(), "\n")
	assert.Contains(t, all, "worked on the second try.")
	assert.Contains(t, all, "java.net.SocketException: Too many open files")
	assert.Contains(t, all, "java.lang.OutOfMemoryError: Java heap space")
	assert.Contains(t, all, "under 90% of the 500 asked (--connect-rate)")

	var pairs *CapacityRow
	for i, cr := range r.Capacity.Rows {
		if cr.Kind == KindPrivate {
			pairs = &r.Capacity.Rows[i]
		}
	}
	require.NotNil(t, pairs, "the private chat sweep")
	assert.Equal(t, "pairs (private chat)", pairs.Platform)
	for _, s := range pairs.Steps {
		assert.InDelta(t, 2, s.OutPerSecond/s.InPerSecond, 0.01, "In:Out 1:2")
	}

	require.NotNil(t, r.Search)
	require.Len(t, r.Search.Rows, 1)
	sr := r.Search.Rows[0]
	assert.Equal(t, int64(140), sr.Held)
	assert.Equal(t, int64(160), sr.Broke)
	assert.Len(t, sr.Probes, 4)

	var env *Environment
	for i := range r.Environments {
		if r.Environments[i].Platform == "maxconn150" {
			env = &r.Environments[i]
		}
	}
	require.NotNil(t, env)
	require.NotNil(t, env.ServerMachine)
	assert.Equal(t, "srv1", env.ServerMachine.Hostname)
	assert.Equal(t, []string{"volanogo serve v0.5.0 (epoll) --max-connections 150 site=lab"}, env.Servers)
	assert.Equal(t, []string{"RTT 212 µs (protocol ping, median of 10; fastest 180 µs), eth0 (device speed 100 Mbit/s)"}, env.Network)

	var gc *GCPauses
	for _, row := range r.Latency.Rows {
		if row.Platform == "maxconn150" && row.Step == 100 {
			gc = row.GC
		}
	}
	require.NotNil(t, gc)
	assert.Equal(t, int64(512000), gc.P99)
}
