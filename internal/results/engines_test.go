package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServerMemoryPerConnection(t *testing.T) {
	d := &Document{Connections: Connections{Peak: 1000},
		Server: &ServerUsage{RSSBeforeBytes: 10 << 20, RSSStartBytes: 30 << 20, RSSEndBytes: 20 << 20}}
	b, ok := d.ServerMemoryPerConnection()
	assert.True(t, ok)
	assert.InDelta(t, float64(20<<20)/1000, b, 1e-9, "from the larger of start and end")

	d.Server.RSSEndBytes = 40 << 20
	b, _ = d.ServerMemoryPerConnection()
	assert.InDelta(t, float64(30<<20)/1000, b, 1e-9)

	for name, doc := range map[string]*Document{
		"no server":      {Connections: Connections{Peak: 1000}},
		"no rss before":  {Connections: Connections{Peak: 1000}, Server: &ServerUsage{RSSStartBytes: 1 << 20}},
		"no connections": {Server: &ServerUsage{RSSBeforeBytes: 1, RSSStartBytes: 1 << 20}},
		"no growth":      {Connections: Connections{Peak: 10}, Server: &ServerUsage{RSSBeforeBytes: 2 << 20, RSSStartBytes: 1 << 20}},
	} {
		_, ok := doc.ServerMemoryPerConnection()
		assert.False(t, ok, name)
	}
}

func TestEngines(t *testing.T) {
	d := &Document{}
	assert.Empty(t, d.Engines())
	d.Config.ClientEngine = "epoll"
	assert.Equal(t, "load epoll", d.Engines())
	d.Server = &ServerUsage{}
	assert.Equal(t, "load epoll", d.Engines())
	d.Server.Engine = "uring"
	assert.Equal(t, "serve uring / load epoll", d.Engines())
	d.Config.ClientEngine = ""
	assert.Equal(t, "serve uring", d.Engines())
	d.Server.Engine, d.Server.CoalesceSeconds, d.Config.ClientEngine = "epoll", 0.00025, "epoll"
	assert.Equal(t, "serve epoll --coalesce 250µs / load epoll", d.Engines(), "the window told apart")
}
