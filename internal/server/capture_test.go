package server

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// captureEvent is one chunk (or the end) of one direction of a captured
// connection.
type captureEvent struct {
	at   float64
	conn string
	c2s  bool
	data []byte // nil: end of stream
}

// readCaptureFile parses one connNNN-{c2s,s2c}.hex file.
func readCaptureFile(t testing.TB, path, conn string, c2s bool) []captureEvent {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var evs []captureEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case fields[0] == "#":
			require.GreaterOrEqual(t, len(fields), 3, path)
			at, err := strconv.ParseFloat(fields[2], 64)
			require.NoError(t, err)
			evs = append(evs, captureEvent{at: at, conn: conn, c2s: c2s})
		default:
			require.Len(t, fields, 3, path)
			at, err := strconv.ParseFloat(fields[0], 64)
			require.NoError(t, err)
			data, err := hex.DecodeString(fields[2])
			require.NoError(t, err)
			evs = append(evs, captureEvent{at: at, conn: conn, c2s: c2s, data: data})
		}
	}
	require.NoError(t, sc.Err())
	return evs
}

// TestReplayCaptures replays the original VolanoMark client's side of each
// captured session against volanogo's server, keeping the capture's order
// of events across connections, and requires the server to answer with
// exactly the bytes the original server sent.
func TestReplayCaptures(t *testing.T) { forEngines(t, testReplayCaptures) }

func testReplayCaptures(t *testing.T, engine string) {
	for _, build := range []string{"stock", "nodelay"} {
		t.Run(build, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "captures", build)
			var evs []captureEvent
			for _, conn := range []string{"conn001", "conn002", "conn003"} {
				evs = append(evs, readCaptureFile(t, filepath.Join(dir, conn+"-c2s.hex"), conn, true)...)
				evs = append(evs, readCaptureFile(t, filepath.Join(dir, conn+"-s2c.hex"), conn, false)...)
			}
			sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })

			s := startServer(t, Config{Engine: engine, Rooms: sampleRooms})
			conns := map[string]*net.TCPConn{}
			packets := 0
			for _, ev := range evs {
				c := conns[ev.conn]
				if c == nil {
					require.True(t, ev.c2s, "%s: server data before the client spoke", ev.conn)
					nc, err := net.Dial("tcp", s.Addr().String())
					require.NoError(t, err)
					c = nc.(*net.TCPConn)
					conns[ev.conn] = c
					t.Cleanup(func() { c.Close() })
				}
				switch {
				case ev.c2s && ev.data != nil:
					_, err := c.Write(ev.data)
					require.NoError(t, err)
				case ev.c2s:
					require.NoError(t, c.CloseWrite())
				case ev.data != nil:
					got := make([]byte, len(ev.data))
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
					n, err := io.ReadFull(c, got)
					require.NoError(t, err, "%s at %.6f: read %d of %d bytes", ev.conn, ev.at, n, len(ev.data))
					if !assert.Equal(t, hex.EncodeToString(ev.data), hex.EncodeToString(got), "%s at %.6f", ev.conn, ev.at) {
						t.Logf("want %s\n got %s", describe(ev.data), describe(got))
						return
					}
					packets += countPackets(t, ev.data)
				default:
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
					var one [1]byte
					_, err := c.Read(one[:])
					require.True(t, errors.Is(err, io.EOF), "%s: want the server to close, got %v", ev.conn, err)
				}
			}
			// Every server packet of the session was compared: per user,
			// Access and EnterRoom confirms, 2 EnterRoom indications as the
			// room fills or empties (entries of later users, exits of
			// earlier ones), 6 chat packets (2 confirms, 4 indications)
			// and the RoomList confirm: 11 each.
			assert.Equal(t, 3*11, packets, "server packets compared")
		})
	}
}

func countPackets(t *testing.T, b []byte) int {
	n := 0
	for len(b) > 0 {
		_, m, err := protocol.Decode(b)
		if err != nil {
			// a packet split across capture chunks: count it where it starts
			return n + 1
		}
		b = b[m:]
		n++
	}
	return n
}

func describe(b []byte) string {
	var parts []string
	for len(b) > 0 {
		p, n, err := protocol.Decode(b)
		if err != nil {
			parts = append(parts, fmt.Sprintf("[%v: %x]", err, b))
			break
		}
		parts = append(parts, fmt.Sprintf("%#v", p))
		b = b[n:]
	}
	return strings.Join(parts, " ")
}
