package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverWithRooms is a server (not started) holding n dynamic rooms
// named Room0 .. Room<n-1>, as VolanoMark names them.
func serverWithRooms(tb testing.TB, n int, extra ...string) *Server {
	s, err := New(Config{MaxRooms: Off})
	require.NoError(tb, err)
	tb.Cleanup(s.warn.stop)
	s.mu.Lock()
	for i := range n {
		s.addRoomLocked("Room"+strconv.Itoa(i), false, "")
	}
	for _, name := range extra {
		s.addRoomLocked(name, false, "")
	}
	s.mu.Unlock()
	return s
}

// naiveNames is roomNames's filtered list by its definition: the rooms in
// creation order whose lower-cased name contains the lower-cased filter,
// at most RoomListMax names and RoomListMaxBytes.
func naiveNames(s *Server, filter string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &roomList{}
	f := strings.ToLower(filter)
	for _, r := range s.roomOrder {
		if strings.Contains(strings.ToLower(r.name), f) && !l.add(r, s.cfg.RoomListMax) {
			break
		}
	}
	return l.names
}

// TestRoomNamesFilter: a filtered list is the rooms whose names contain
// the filter, whatever the case, in creation order, bounded; a match
// never spans two names; the list follows rooms added and removed.
func TestRoomNamesFilter(t *testing.T) {
	s := serverWithRooms(t, 2000, "Zebra", "ÉCOLE été", "a\nb", "room\x00x", "ßtraße", "ǅ titled")
	for _, f := range []string{"room1", "ROOM1999", "zzz", "ebr", "r", "0\nRoom", "9Room", "École", "ÉTÉ", "a\nb", "\x00", "\n",
		"room19", "STRASSE", "ǆ", "ǅ", "ǄTITLED", "m0", "1", "Room2000"} {
		got, _ := s.roomNames(f)
		assert.Equal(t, naiveNames(s, f), got, "filter %q", f)
	}
	// a room removed and one added after the list was first built
	s.mu.Lock()
	r := s.rooms["Room1500"]
	s.mu.Unlock()
	s.maybeRemove(r)
	s.mu.Lock()
	s.addRoomLocked("Room1500b", false, "")
	s.mu.Unlock()
	for _, f := range []string{"room150", "1500", "b"} {
		got, _ := s.roomNames(f)
		assert.Equal(t, naiveNames(s, f), got, "filter %q after changes", f)
	}
	got, searched := s.roomNames("room")
	assert.Len(t, got, DefaultRoomListMax)
	assert.Less(t, searched, 2000, "a broad filter stops at the list's bound")
	_, searched = s.roomNames("nomatch")
	assert.Greater(t, searched, 2000*len("roomNNNN"), "a filter that matches none searches every name")
}

// BenchmarkRoomNames: one filtered RoomList at 20,000 rooms, by the
// index (index/) and name by name as before it (names/, each room's
// lower-cased name searched in turn): a filter that matches none (every
// name is searched), one that matches a few (room1999: every name begins
// with its first bytes) and one that matches at once (the list fills in
// its first rooms).
//
//	go test -run '^$' -bench RoomNames ./internal/server
func BenchmarkRoomNames(b *testing.B) {
	s := serverWithRooms(b, 20000)
	for _, f := range []string{"nomatch", "room1999", "room"} {
		b.Run("index/filter="+f, func(b *testing.B) {
			s.roomNames(f) // the index, built once per change of the rooms
			b.ReportAllocs()
			for b.Loop() {
				s.roomNames(f)
			}
		})
		b.Run("names/filter="+f, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l := &roomList{}
				for _, r := range s.roomOrder {
					if strings.Contains(r.lower, f) && !l.add(r, DefaultRoomListMax) {
						break
					}
				}
			}
		})
	}
}

// TestRoomListCharged: a filtered RoomList that searches the names of
// 20,000 rooms costs its connection a dozen requests of its rate, so that
// such lists are paced by their work; a list that stops early costs one.
func TestRoomListCharged(t *testing.T) {
	s := serverWithRooms(t, 20000)
	c := &conn{s: s}
	require.Zero(t, c.throttleDelay(), "a fresh connection has its burst")
	c.takeToken()
	before := c.tokens
	_, searched := s.roomNames("nomatch")
	c.chargeSearch(searched)
	assert.InDelta(t, float64(searched/searchCost), before-c.tokens, 0.001)
	assert.GreaterOrEqual(t, before-c.tokens, 10.0)

	before = c.tokens
	_, searched = s.roomNames("room1")
	c.chargeSearch(searched)
	assert.Zero(t, before-c.tokens, "an early stop costs only the request")

	c.tokens = 0
	c.chargeSearch(searched + 100*searchCost)
	assert.Positive(t, c.throttleDelay(), "in debt: the next request waits")
}

// TestRoomNamesRandom: the index agrees with the definition on random
// names and filters over a small alphabet (newlines included), where
// matches overlap, repeat and run across names.
func TestRoomNamesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const alphabet = "aAb\nB9"
	word := func(max int) string {
		b := make([]byte, 1+rng.IntN(max))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 50 {
		var names []string
		seen := map[string]bool{}
		for len(names) < 20+rng.IntN(200) {
			if w := word(6); !seen[w] {
				seen[w] = true
				names = append(names, w)
			}
		}
		s := serverWithRooms(t, 0, names...)
		s.cfg.RoomListMax = 1 + rng.IntN(30)
		for range 40 {
			f := word(4)
			got, _ := s.roomNames(f)
			require.Equal(t, naiveNames(s, f), got, "round %d, filter %q", round, f)
		}
	}
}
