package report

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// engineDocs are four runs of one label ("box", as --label gives it) for
// each pair of engines at 300 and 19,000 connections, with the machine's
// floor recorded, plus a platform of older documents that record no
// engine.
func engineDocs() []*results.Document {
	floors := []results.Floor{
		{Engine: "epoll", Rooms: 15, ServerCPUPerMessageMicros: 0.5, ClientCPUPerMessageMicros: 0.6, Throughput: 400000},
		{Engine: "epoll", Rooms: 950, ServerCPUPerMessageMicros: 0.8, ClientCPUPerMessageMicros: 0.9, Throughput: 300000},
	}
	pairs := []struct {
		server, client string
		score          int64
		cpu            float64 // server CPU per message at 300
		mem            int64   // server memory per connection
	}{
		{"goroutine", "goroutine", 40000, 4, 9000},
		{"epoll", "goroutine", 50000, 3, 3000},
		{"epoll", "epoll", 60000, 2.5, 3000},
		{"uring", "epoll", 65000, 2, 3500},
	}
	var docs []*results.Document
	for _, p := range pairs {
		for _, conns := range []int{300, 19000} {
			for run := 1; run <= 4; run++ {
				scale := 1.0
				if conns == 19000 {
					scale = 1.5
				}
				score := int64(float64(p.score)/scale) + int64(run*10)
				d := doc("box", conns, run, score, "")
				d.RunID += "-" + p.server + "-" + p.client
				d.Throughput = float64(score) + 0.25
				d.Counts.Total = score * 10
				d.Config.ClientEngine = p.client
				d.Environment.Floor = floors
				d.Server = &results.ServerUsage{Source: "metrics", Engine: p.server,
					CPUPerMessageMicros: p.cpu * scale, RSSBeforeBytes: 10 << 20,
					RSSStartBytes: 10<<20 + p.mem*int64(conns), RSSEndBytes: 10<<20 + p.mem*int64(conns)}
				d.Client.CPUPerMessageMicros = 3 * scale
				docs = append(docs, d)
			}
		}
	}
	for run := 1; run <= 4; run++ {
		docs = append(docs, doc("old", 300, run, 30000+int64(run), ""))
	}
	return docs
}

// TestEngines: runs of one label that differ only by engines are
// platforms of their own, named with their engines, in every table; the
// environments say the engines; the engine table compares them at each
// connection count.
func TestEngines(t *testing.T) {
	docs := engineDocs()
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, []string{"box (serve uring / load epoll)", "box (serve epoll / load epoll)",
		"box (serve epoll / load goroutine)", "box (serve goroutine / load goroutine)", "old"}, r.Platforms)
	require.NotNil(t, r.Scale)
	assert.Len(t, r.Scale.Rows, 5)
	require.NotNil(t, r.Engines)
	require.Len(t, r.Engines.Rows, 8, "four engine pairs at two steps; not the old platform")
	row := r.Engines.Rows[0]
	assert.Equal(t, int64(300), row.Step)
	assert.Equal(t, "uring", row.Server)
	assert.Equal(t, "epoll", row.Client)
	assert.Equal(t, int64(65035), row.Cell.Score)
	require.NotNil(t, row.EfficiencyServer)
	assert.InDelta(t, 0.25, *row.EfficiencyServer, 1e-9)
	require.NotNil(t, row.MemoryPerConnection)
	assert.InDelta(t, 3500, *row.MemoryPerConnection, 1e-9)
	assert.Equal(t, int64(19000), r.Engines.Rows[4].Step)
	assert.NotContains(t, engineColumns(r.Engines), "Platform", "the engines tell the rows apart")
	for _, e := range r.Environments {
		if e.Platform == "old" {
			assert.Empty(t, e.Engines)
		} else {
			assert.Len(t, e.Engines, 1, e.Platform)
		}
	}
	for i, line := range strings.Split(string(render(t, r, "text")), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), textWidth, "line %d: %q", i+1, line)
	}
	for _, format := range []string{"text", "markdown", "html"} {
		golden(t, "engines."+map[string]string{"text": "txt", "markdown": "md", "html": "html"}[format], render(t, r, format))
	}

	// Labels that already tell the engines apart are kept as they are.
	for _, d := range docs {
		if d.Label == "box" {
			d.Label = "box " + d.Engines()
		}
	}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Contains(t, r.Platforms, "box serve epoll / load epoll")
	require.NotNil(t, r.Engines)

	// Two platforms with the same engines at a step: the platform column
	// tells them apart.
	for _, d := range docs {
		if d.Label == "box serve epoll / load epoll" {
			c := *d
			c.Label, c.RunID = "other machine", d.RunID+"-other"
			docs = append(docs, &c)
		}
	}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Contains(t, engineColumns(r.Engines), "Platform")
	assert.Contains(t, string(render(t, r, "text")), "other machine")
}

// TestEnginesByServer: by server, runs of one server command that differ
// by the client's engine are two platforms.
func TestEnginesByServer(t *testing.T) {
	var docs []*results.Document
	for _, ce := range []string{"goroutine", "epoll"} {
		for run := 1; run <= 4; run++ {
			d := doc("x", 300, run, 1000+int64(run), "")
			d.RunID += ce
			d.Config.ServerCommand = []string{"java", "COM.volano.Main"}
			d.Config.ClientEngine = ce
			docs = append(docs, d)
		}
	}
	o := DefaultOptions()
	o.By = ByServer
	r, err := Build(docs, o)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"java COM.volano.Main (load goroutine)", "java COM.volano.Main (load epoll)"}, r.Platforms)
	require.NotNil(t, r.Engines)
	assert.Len(t, r.Engines.Rows, 2)
}

// TestNoEngineTableForOneEngine: documents of one engine pair, or none,
// have no engine table and keep their platform names.
func TestNoEngineTableForOneEngine(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		d := doc("p", 300, run, 1000+int64(run), "")
		d.Config.ClientEngine = "epoll"
		docs = append(docs, d, doc("q", 300, run, 900+int64(run), ""))
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "q"}, r.Platforms)
	assert.Nil(t, r.Engines)
	assert.NotContains(t, string(render(t, r, "text")), "Which engine?")
}
