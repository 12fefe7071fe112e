package server

import (
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// Close reasons, the label of volanogo_connections_closed_total.
const (
	ReasonEOF          = "eof"           // the client closed
	ReasonReadError    = "read_error"    // reset or other read failure
	ReasonWriteError   = "write_error"   // a write failed
	ReasonProtocol     = "protocol"      // malformed packet, unknown id, bad string
	ReasonTooLarge     = "too_large"     // packet over the maximum packet size
	ReasonFirstPacket  = "first_packet"  // first packet was not Access
	ReasonSecondAccess = "second_access" // a second Access on one connection
	ReasonAccessDenied = "access_denied" // Access refused (version, documentBase)
	ReasonTooLong      = "too_long"      // a name or text over its limit (the original's 413)
	ReasonBadRequest   = "bad_request"   // empty name or text, entering a room twice (400)
	ReasonNotAllowed   = "not_allowed"   // an admin-only packet from a chat client
	ReasonSlowConsumer = "slow_consumer" // outgoing bytes over --send-buffer
	ReasonIdle         = "idle"          // no packet for two idle timeouts
	ReasonShutdown     = "shutdown"      // the server stopped
	// ReasonAccessTimeout: no complete Access within --access-timeout.
	ReasonAccessTimeout = "access_timeout"
	// ReasonPacketTimeout: a packet begun did not arrive whole within
	// --packet-timeout (a peer trickling it out).
	ReasonPacketTimeout = "packet_timeout"
	// ReasonHandshakeTimeout: a WebSocket upgrade request not complete
	// within --handshake-timeout (never counted as accepted).
	ReasonHandshakeTimeout = "handshake_timeout"
	// ReasonNotInRoom: more than maxStrays chats to rooms (or private
	// sessions) the connection was not in.
	ReasonNotInRoom = "not_in_room"
	// ReasonNotWebSocket: a plain HTTP request on the WebSocket listener,
	// answered with its HTTP error and closed, or bytes that cannot begin
	// an HTTP request, closed at once (never counted as accepted).
	ReasonNotWebSocket = "not_websocket"
	// ReasonDisplaced: no Access a second after the connect, closed at a
	// connection limit (the open-files limit, --max-connections) to make
	// room for a new connection (displace.go).
	ReasonDisplaced = "displaced"

	ReasonMaxConns  = "max_connections" // refused at accept: --max-connections
	ReasonOpenFiles = "open_files"      // refused at accept: out of descriptors

	// Requests refused, the label of volanogo_requests_refused_total.
	ReasonMaxRooms   = "max_rooms"   // an Access whose new room would pass --max-rooms
	ReasonMaxPrivate = "max_private" // an EnterPrivate past --max-private
	// ReasonThrottled: a connection whose requests (other than chats) came
	// faster than --request-rate was slowed down (counted once per
	// connection; nothing is refused).
	ReasonThrottled = "throttled"
	// ReasonChatRate: a connection whose chats came faster than
	// --chat-rate was slowed down (counted once per connection).
	ReasonChatRate = "chat_rate"
	// ReasonMaxConnRooms: an EnterRoom past --max-conn-rooms (answered
	// ROOM_FULL).
	ReasonMaxConnRooms = "max_conn_rooms"
)

var closeReasons = []string{ReasonEOF, ReasonReadError, ReasonWriteError, ReasonProtocol, ReasonTooLarge,
	ReasonFirstPacket, ReasonSecondAccess, ReasonAccessDenied, ReasonTooLong, ReasonBadRequest,
	ReasonNotAllowed, ReasonSlowConsumer, ReasonIdle, ReasonShutdown, ReasonAccessTimeout, ReasonHandshakeTimeout,
	ReasonNotInRoom, ReasonNotWebSocket, ReasonPacketTimeout, ReasonDisplaced}

// packetIndex maps a packet id to a slot of the per-packet counters; slot 0
// is "unknown".
var packetIDs = []protocol.ID{protocol.IDAccess, protocol.IDAccessLegacy, protocol.IDPacket,
	protocol.IDStreamableError, protocol.IDAuthenticate, protocol.IDBeep, protocol.IDChat,
	protocol.IDCreateRooms, protocol.IDEnterPrivate, protocol.IDEnterRoom, protocol.IDExitPrivate,
	protocol.IDExitRoom, protocol.IDHalt, protocol.IDKick, protocol.IDMonitor, protocol.IDPasswordAccess,
	protocol.IDPing, protocol.IDReport, protocol.IDRoomList, protocol.IDUserList, protocol.IDWhisper}

const numPacketSlots = 22

func packetSlot(id protocol.ID) int {
	switch {
	case id == protocol.IDAccess:
		return 1
	case id == protocol.IDAccessLegacy:
		return 2
	case id == protocol.IDPacket:
		return 3
	case id == protocol.IDStreamableError:
		return 4
	case id >= protocol.IDAuthenticate && id <= protocol.IDWhisper:
		return 5 + int(id-protocol.IDAuthenticate)
	}
	return 0
}

// counters are plain atomics on the hot path, exported through a
// prometheus.Collector, so that relaying a chat costs a few atomic adds
// rather than label look-ups.
type counters struct {
	packetsIn, packetsOut [numPacketSlots]atomic.Uint64
	bytesIn, bytesOut     [numPacketSlots]atomic.Uint64
	closed                map[string]*atomic.Uint64
	accepted              [2]atomic.Uint64 // tcp, ws
	refused               map[string]*atomic.Uint64
	requestsRefused       map[string]*atomic.Uint64
	acceptErrors          map[string]*atomic.Uint64
	open                  atomic.Int64
	rooms                 atomic.Int64
	users                 atomic.Int64
	chats                 atomic.Uint64
	deliveries            atomic.Uint64
	privateChats          atomic.Uint64
	strays                atomic.Uint64
	held                  atomic.Int64  // connections in their violation hold now
	holdsCut              atomic.Uint64 // violation holds ended early at a connection limit
}

func newCounters() *counters {
	c := &counters{
		closed:          map[string]*atomic.Uint64{},
		refused:         map[string]*atomic.Uint64{},
		requestsRefused: map[string]*atomic.Uint64{},
		acceptErrors:    map[string]*atomic.Uint64{},
	}
	for _, r := range closeReasons {
		c.closed[r] = new(atomic.Uint64)
	}
	for _, r := range []string{ReasonMaxConns, ReasonOpenFiles} {
		c.refused[r] = new(atomic.Uint64)
	}
	for _, r := range []string{ReasonMaxRooms, ReasonMaxPrivate, ReasonThrottled, ReasonChatRate, ReasonMaxConnRooms} {
		c.requestsRefused[r] = new(atomic.Uint64)
	}
	for _, k := range []string{"emfile", "enfile", "other"} {
		c.acceptErrors[k] = new(atomic.Uint64)
	}
	return c
}

func (c *counters) in(id protocol.ID, n int) {
	s := packetSlot(id)
	c.packetsIn[s].Add(1)
	c.bytesIn[s].Add(uint64(n))
}

func (c *counters) out(id protocol.ID, packets, bytes int) {
	s := packetSlot(id)
	c.packetsOut[s].Add(uint64(packets))
	c.bytesOut[s].Add(uint64(bytes))
}

var (
	descOpen         = prometheus.NewDesc("volanogo_connections_open", "Connections open now.", nil, nil)
	descAccepted     = prometheus.NewDesc("volanogo_connections_accepted_total", "Connections accepted, by transport.", []string{"transport"}, nil)
	descClosed       = prometheus.NewDesc("volanogo_connections_closed_total", "Connections closed, by reason.", []string{"reason"}, nil)
	descRefused      = prometheus.NewDesc("volanogo_connections_refused_total", "Connections accepted and closed at once, by reason.", []string{"reason"}, nil)
	descReqRefused   = prometheus.NewDesc("volanogo_requests_refused_total", "Requests refused for a limit, by reason (the connection stays open).", []string{"reason"}, nil)
	descAcceptErrors = prometheus.NewDesc("volanogo_accept_errors_total", "Errors returned by accept, by kind.", []string{"kind"}, nil)
	descRooms        = prometheus.NewDesc("volanogo_rooms", "Public rooms, permanent and dynamic.", nil, nil)
	descUsers        = prometheus.NewDesc("volanogo_users", "Users in public rooms (one per connection per room).", nil, nil)
	descPacketsIn    = prometheus.NewDesc("volanogo_packets_received_total", "Packets received, by packet name.", []string{"packet"}, nil)
	descPacketsOut   = prometheus.NewDesc("volanogo_packets_sent_total", "Packets sent, by packet name.", []string{"packet"}, nil)
	descBytesIn      = prometheus.NewDesc("volanogo_received_bytes_total", "Bytes received, by packet name.", []string{"packet"}, nil)
	descBytesOut     = prometheus.NewDesc("volanogo_sent_bytes_total", "Bytes sent, by packet name.", []string{"packet"}, nil)
	descChats        = prometheus.NewDesc("volanogo_chats_total", "Public chat messages accepted and relayed.", nil, nil)
	descDeliveries   = prometheus.NewDesc("volanogo_chat_deliveries_total", "Chat indications queued to receivers.", nil, nil)
	descPrivate      = prometheus.NewDesc("volanogo_private_chats_total", "Private chat messages relayed.", nil, nil)
	descStrays       = prometheus.NewDesc("volanogo_chats_dropped_total", "Chats dropped because their sender was not in the room or private session they named.", nil, nil)
	descSlow         = prometheus.NewDesc("volanogo_slow_consumer_closes_total", "Connections closed because their outgoing bytes passed the send buffer.", nil, nil)
	descHeld         = prometheus.NewDesc("volanogo_connections_held", "Connections doomed by what they sent, held unread for --violation-hold before their close.", nil, nil)
	descHoldsCut     = prometheus.NewDesc("volanogo_violation_holds_cut_total", "Violation holds ended early (the connection closed) to make room at a connection limit.", nil, nil)
	// descInfo is an info series (always 1): the engine serving the TCP
	// connections and the build, so that a client comparing engines can
	// read which one it measured (volanogo load records it).
	descInfo = prometheus.NewDesc("volanogo_server_info", "The server: the engine serving its TCP chat connections and its version (always 1).", []string{"engine", "version"}, nil)
	// descCoalesce is Config.Coalesce, which changes what a run measures
	// (fewer wake-ups, more latency): volanogo load records it too.
	descCoalesce = prometheus.NewDesc("volanogo_server_coalesce_seconds", "How long an epoll loop waits after a round of few events before it looks for more (serve --coalesce; 0: no wait).", nil, nil)
	// descLoopConns shows how the connections are spread over the event
	// loops (serve --loops, --loop-fill).
	descLoopConns = prometheus.NewDesc("volanogo_loop_connections", "Connections each event loop (ring) of the epoll or uring engine holds, by loop (none on the goroutine engine).", []string{"loop"}, nil)
	// descEnv is the server's machine and runtime, so that a client on
	// another machine (load --server-metrics) records both sides.
	descEnv = prometheus.NewDesc("volanogo_server_environment_info",
		"The server's machine and runtime: OS, kernel, CPU model and count, memory, Go version, GOMAXPROCS, open-files limits (always 1).",
		results.EnvironmentInfoLabels, nil)
	// descGCPause is the Go runtime's GC stop-the-world pauses, from
	// runtime/metrics with the runtime's own buckets between 1 µs and 4 s
	// (four to a power of two), fine enough for a p99 within a fifth.
	descGCPause = prometheus.NewDesc("volanogo_gc_pause_seconds",
		"Go garbage collector stop-the-world pauses (runtime/metrics /sched/pauses/total/gc:seconds); the sum is estimated from the buckets' lower bounds.", nil, nil)
)

// gcPauseMetric is the runtime/metrics histogram of GC pauses.
const gcPauseMetric = "/sched/pauses/total/gc:seconds"

// gcPauseBounds limit the buckets volanogo_gc_pause_seconds keeps of the
// runtime's: shorter pauses fall in the first, longer in +Inf.
const gcPauseLow, gcPauseHigh = 1e-6, 4.0

// gcPauses reads the runtime's GC pause histogram for a scrape.
type gcPauses struct {
	mu     sync.Mutex
	sample [1]metrics.Sample
}

// histogram is the pauses so far as Prometheus buckets: upper bounds and
// cumulative counts, the total count and an estimated sum; false when
// the runtime does not have the metric.
func (g *gcPauses) histogram() (buckets map[float64]uint64, count uint64, sum float64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sample[0].Name = gcPauseMetric
	metrics.Read(g.sample[:])
	if g.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, 0, 0, false
	}
	h := g.sample[0].Value.Float64Histogram()
	buckets = map[float64]uint64{}
	for i, n := range h.Counts {
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		if n > 0 && !math.IsInf(lo, -1) {
			sum += lo * float64(n)
		}
		count += n
		if hi >= gcPauseLow && hi <= gcPauseHigh {
			buckets[hi] = count
		}
	}
	return buckets, count, sum, true
}

// envInfo is the server's environment for volanogo_server_environment_info:
// read once, but for GOMAXPROCS and the open-files limit, which the
// engines and the serve command may change after start.
type envInfo struct {
	once sync.Once
	env  results.Environment
}

func (e *envInfo) values() []string {
	e.once.Do(func() { e.env = sysinfo.Collect() })
	env := e.env
	env.GOMAXPROCS = runtime.GOMAXPROCS(0)
	env.OpenFilesSoft, env.OpenFilesHard = sysinfo.OpenFilesLimit()
	return env.InfoLabelValues()
}

// version is the server's version for volanogo_server_info: the build's,
// "devel" for a build without one.
func version() string {
	if v := buildinfo.Get().Version; v != "" {
		return v
	}
	return "devel"
}

type collector struct {
	c *counters
	// engine is the engine in use (Server.Engine), read at each scrape.
	engine func() string
	// loops is each event loop's connections, read at each scrape.
	loops    func() []int32
	version  string
	coalesce time.Duration
	env      *envInfo
	gc       *gcPauses
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOpen, descAccepted, descClosed, descRefused, descReqRefused, descAcceptErrors,
		descRooms, descUsers, descPacketsIn, descPacketsOut, descBytesIn, descBytesOut, descChats,
		descDeliveries, descPrivate, descStrays, descSlow, descHeld, descHoldsCut, descInfo, descCoalesce, descLoopConns, descEnv, descGCPause} {
		ch <- d
	}
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	gauge := func(d *prometheus.Desc, v int64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
	}
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	gauge(descOpen, c.open.Load())
	counter(descAccepted, c.accepted[0].Load(), "tcp")
	counter(descAccepted, c.accepted[1].Load(), "ws")
	for r, v := range c.closed {
		counter(descClosed, v.Load(), r)
	}
	for r, v := range c.refused {
		counter(descRefused, v.Load(), r)
	}
	for r, v := range c.requestsRefused {
		counter(descReqRefused, v.Load(), r)
	}
	for r, v := range c.acceptErrors {
		counter(descAcceptErrors, v.Load(), r)
	}
	gauge(descRooms, c.rooms.Load())
	gauge(descUsers, c.users.Load())
	for i, id := range packetIDs {
		s := i + 1
		name := id.String()
		counter(descPacketsIn, c.packetsIn[s].Load(), name)
		counter(descPacketsOut, c.packetsOut[s].Load(), name)
		counter(descBytesIn, c.bytesIn[s].Load(), name)
		counter(descBytesOut, c.bytesOut[s].Load(), name)
	}
	counter(descChats, c.chats.Load())
	counter(descDeliveries, c.deliveries.Load())
	counter(descPrivate, c.privateChats.Load())
	counter(descStrays, c.strays.Load())
	counter(descSlow, c.closed[ReasonSlowConsumer].Load())
	gauge(descHeld, c.held.Load())
	counter(descHoldsCut, c.holdsCut.Load())
	ch <- prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, k.engine(), k.version)
	ch <- prometheus.MustNewConstMetric(descCoalesce, prometheus.GaugeValue, k.coalesce.Seconds())
	for i, n := range k.loops() {
		gauge(descLoopConns, int64(n), strconv.Itoa(i))
	}
	ch <- prometheus.MustNewConstMetric(descEnv, prometheus.GaugeValue, 1, k.env.values()...)
	if b, n, sum, ok := k.gc.histogram(); ok {
		ch <- prometheus.MustNewConstHistogram(descGCPause, n, sum, b)
	}
}

// register adds the server's collectors, plus the Go and process
// collectors, to reg; engine says the engine in use, loops its event
// loops' connections, coalesce its Config.Coalesce.
func (c *counters) register(reg prometheus.Registerer, engine func() string, loops func() []int32, coalesce time.Duration) error {
	for _, col := range []prometheus.Collector{
		collector{c: c, engine: engine, loops: loops, version: version(), coalesce: coalesce, env: &envInfo{}, gc: &gcPauses{}},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	return nil
}
