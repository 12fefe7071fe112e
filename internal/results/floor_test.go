package results

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFloorJSONRoundTrip(t *testing.T) {
	f := Floor{Engine: "uring", Rooms: 950, Users: 20, Connections: 19000, Count: 5,
		Messages: 1900000, MessageBytes: 80, ElapsedSeconds: 20.5, Throughput: 92682.9,
		ServerCPUSeconds: 14.25, ClientCPUSeconds: 9.5, ServerCPUPerMessageMicros: 7.5,
		ClientCPUPerMessageMicros: 5, ChildProcess: true, When: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
		Paced: &FloorPaced{PauseSeconds: 1, DurationSeconds: 30, Confirms: true, Sent: 570000, Delivered: 570000,
			Delivery: &Histogram{Count: 570000, P99: 1500000}, ServerCPUPercent: 27.5, ClientCPUPercent: 30}}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"server_cpu_per_message_us":7.5`)
	assert.Contains(t, string(b), `"child_process":true`)
	assert.Contains(t, string(b), `"paced":{"pause_seconds":1,`)
	var got Floor
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, f, got)
}

func TestFloorInDocument(t *testing.T) {
	d := fullDocument(t)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, d))
	assert.Contains(t, buf.String(), `"floor": [`)
	got, err := Read(&buf, "x")
	require.NoError(t, err)
	assert.Equal(t, d.Environment.Floor, got.Environment.Floor)

	// A document without a floor has no "floor" key.
	d.Environment.Floor = nil
	buf.Reset()
	require.NoError(t, Write(&buf, d))
	assert.NotContains(t, buf.String(), `"floor"`)
}

func TestMergeKeepsFloor(t *testing.T) {
	a, b := fullDocument(t), fullDocument(t)
	a.Shard = &Shard{Index: 0, Count: 2}
	b.Shard = &Shard{Index: 1, Count: 2}
	m, err := Merge([]*Document{a, b})
	require.NoError(t, err)
	assert.Equal(t, a.Environment.Floor, m.Environment.Floor)
}

func TestEfficiency(t *testing.T) {
	floor := func(engine string, rooms int, server, client float64) Floor {
		return Floor{Engine: engine, Rooms: rooms, ServerCPUPerMessageMicros: server, ClientCPUPerMessageMicros: client}
	}
	exits := func(f Floor) Floor {
		f.Exits = true
		return f
	}
	paced := func(f Floor) Floor {
		f.Paced = &FloorPaced{PauseSeconds: 1, DurationSeconds: 30}
		return f
	}
	pacedDoc := func(d *Document) *Document {
		d.Config.PauseSeconds = 1
		return d
	}
	doc := func(rooms int, server, client float64, floors ...Floor) *Document {
		d := &Document{Config: Config{Rooms: rooms}, Environment: Environment{Floor: floors}}
		d.Client.CPUPerMessageMicros = client
		if server > 0 {
			d.Server = &ServerUsage{CPUPerMessageMicros: server}
		}
		return d
	}
	for _, tc := range []struct {
		name           string
		d              *Document
		ok             bool
		server, client float64
		rooms          int
		engine         string
	}{
		{name: "no floor", d: doc(15, 10, 8)},
		{name: "one floor", d: doc(15, 10, 8, floor("epoll", 15, 5, 4)),
			ok: true, server: 0.5, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "closest rooms", d: doc(400, 20, 10, floor("epoll", 15, 5, 4), floor("epoll", 475, 8, 5), floor("epoll", 950, 9, 6)),
			ok: true, server: 0.4, client: 0.5, rooms: 475, engine: "epoll"},
		{name: "closest rooms above", d: doc(900, 18, 12, floor("epoll", 475, 8, 5), floor("epoll", 950, 9, 6)),
			ok: true, server: 0.5, client: 0.5, rooms: 950, engine: "epoll"},
		{name: "epoll before uring at the same distance", d: doc(15, 10, 8, floor("uring", 15, 4, 4), floor("epoll", 15, 5, 4)),
			ok: true, server: 0.5, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "uring when closer", d: doc(15, 10, 8, floor("uring", 15, 4, 4), floor("epoll", 50, 5, 4)),
			ok: true, server: 0.4, client: 0.5, rooms: 15, engine: "uring"},
		{name: "first of equals", d: doc(30, 10, 8, floor("epoll", 15, 5, 4), floor("epoll", 45, 6, 4)),
			ok: true, server: 0.5, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "server unknown", d: doc(15, 0, 8, floor("epoll", 15, 5, 4)),
			ok: true, server: 0, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "nothing measured", d: doc(15, 0, 0, floor("epoll", 15, 5, 4))},
		{name: "empty floor skipped", d: doc(15, 10, 8, floor("epoll", 15, 0, 0), floor("epoll", 50, 5, 4)),
			ok: true, server: 0.5, client: 0.5, rooms: 50, engine: "epoll"},
		{name: "a side of the floor unknown", d: doc(15, 10, 8, floor("epoll", 15, 0, 4)),
			ok: true, server: 0, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "dearer than measured", d: doc(15, 2.5, 2, floor("epoll", 15, 5, 4)),
			ok: true, server: 2, client: 2, rooms: 15, engine: "epoll"},
		{name: "with exits before chats only", d: doc(15, 10, 8, floor("epoll", 15, 4, 4), exits(floor("uring", 50, 5, 4))),
			ok: true, server: 0.5, client: 0.5, rooms: 50, engine: "uring"},
		{name: "closest with exits", d: doc(475, 10, 8, exits(floor("epoll", 15, 4, 4)), floor("epoll", 475, 4, 4), exits(floor("epoll", 900, 5, 4))),
			ok: true, server: 0.5, client: 0.5, rooms: 900, engine: "epoll"},
		{name: "epoll first with exits", d: doc(15, 10, 8, exits(floor("uring", 15, 4, 4)), floor("epoll", 15, 4, 4), exits(floor("epoll", 15, 5, 4))),
			ok: true, server: 0.5, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "a turn-taking run skips a paced floor", d: doc(15, 10, 8, paced(floor("epoll", 15, 4, 4)), floor("epoll", 50, 5, 4)),
			ok: true, server: 0.5, client: 0.5, rooms: 50, engine: "epoll"},
		{name: "a paced run takes a paced floor", d: pacedDoc(doc(15, 10, 8, exits(floor("epoll", 15, 4, 4)), paced(floor("epoll", 50, 5, 4)))),
			ok: true, server: 0.5, client: 0.5, rooms: 50, engine: "epoll"},
		{name: "a paced run without a paced floor", d: pacedDoc(doc(15, 10, 8, exits(floor("epoll", 15, 5, 4)))),
			ok: true, server: 0.5, client: 0.5, rooms: 15, engine: "epoll"},
		{name: "the closest paced floor", d: pacedDoc(doc(9500, 10, 8, paced(floor("epoll", 950, 4, 4)), floor("epoll", 9500, 4, 4), paced(floor("epoll", 9000, 5, 4)))),
			ok: true, server: 0.5, client: 0.5, rooms: 9000, engine: "epoll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := Efficiency(tc.d)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			assert.InDelta(t, tc.server, e.Server, 1e-12)
			assert.InDelta(t, tc.client, e.Client, 1e-12)
			assert.Equal(t, tc.rooms, e.Floor.Rooms)
			assert.Equal(t, tc.engine, e.Floor.Engine)
		})
	}
}

func TestEfficiencyAveragesReadings(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 11, 23, 21, min, 0, 0, time.UTC) }
	reading := func(when time.Time, server, client float64) Floor {
		return Floor{Engine: "epoll", Rooms: 475, Users: 20, Count: 10, Exits: true, When: when,
			ServerCPUPerMessageMicros: server, ClientCPUPerMessageMicros: client, Throughput: 1e6 / server}
	}
	d := &Document{Config: Config{Rooms: 475}}
	d.Server = &ServerUsage{CPUPerMessageMicros: 10}
	d.Client.CPUPerMessageMicros = 8

	// Before and after the run (listed after first): the mean of the two,
	// and the drift from the earlier to the later.
	d.Environment.Floor = []Floor{reading(at(5), 6, 6), reading(at(1), 4, 2)}
	e, ok := Efficiency(d)
	require.True(t, ok)
	assert.Equal(t, 2, e.Readings)
	assert.InDelta(t, 5.0, e.Floor.ServerCPUPerMessageMicros, 1e-12)
	assert.InDelta(t, 4.0, e.Floor.ClientCPUPerMessageMicros, 1e-12)
	assert.InDelta(t, 0.5, e.Server, 1e-12)
	assert.InDelta(t, 0.5, e.Client, 1e-12)
	assert.InDelta(t, 1.5, e.ServerDrift, 1e-12)
	assert.InDelta(t, 3.0, e.ClientDrift, 1e-12)

	// Floors of another engine, phase, size or count are not readings of
	// the chosen one; nor is an empty reading.
	other := func(f Floor, change func(*Floor)) Floor { change(&f); return f }
	base := reading(at(1), 5, 4)
	d.Environment.Floor = []Floor{base,
		other(base, func(f *Floor) { f.Engine = "uring"; f.ServerCPUPerMessageMicros = 1 }),
		other(base, func(f *Floor) { f.Exits = false; f.ServerCPUPerMessageMicros = 1 }),
		other(base, func(f *Floor) { f.Rooms = 950; f.ServerCPUPerMessageMicros = 1 }),
		other(base, func(f *Floor) { f.Count = 5; f.ServerCPUPerMessageMicros = 1 }),
		other(base, func(f *Floor) { f.ServerCPUPerMessageMicros, f.ClientCPUPerMessageMicros = 0, 0 }),
	}
	e, ok = Efficiency(d)
	require.True(t, ok)
	assert.Equal(t, 1, e.Readings)
	assert.InDelta(t, 0.5, e.Server, 1e-12)
	assert.Zero(t, e.ServerDrift)

	// A reading with one side unknown counts for the other side only.
	d.Environment.Floor = []Floor{reading(at(1), 4, 4), reading(at(2), 6, 0)}
	e, ok = Efficiency(d)
	require.True(t, ok)
	assert.Equal(t, 2, e.Readings)
	assert.InDelta(t, 0.5, e.Server, 1e-12)
	assert.InDelta(t, 0.5, e.Client, 1e-12)
	assert.Zero(t, e.ClientDrift)
}
