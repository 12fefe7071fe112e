package protocol

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickleElems is the attack packet's array: 21,840 one-byte strings make
// a RoomList request of 65,532 bytes, just under DefaultMaxPacket.
const trickleElems = 21840

// tricklePacket is a packet of n one-byte strings: a RoomList request,
// which any client may send after its Access.
func tricklePacket(tb testing.TB, n int) []byte {
	rooms := make([]string, n)
	for i := range rooms {
		rooms[i] = string(rune('a' + i%26))
	}
	b, err := (&RoomList{Type: Request, Rooms: rooms}).AppendPacket(nil)
	require.NoError(tb, err)
	return b
}

// trickleReader returns head in one read, then the rest 1 to 3 bytes at
// a time (a fixed sequence), over and over: each pass is one packet.
type trickleReader struct {
	data  []byte
	head  int
	off   int
	rng   *rand.Rand
	reads int
}

func (t *trickleReader) Read(p []byte) (int, error) {
	t.reads++
	n := 1 + t.rng.IntN(3)
	if t.off < t.head {
		n = t.head - t.off
	}
	n = min(n, len(p), len(t.data)-t.off)
	copy(p, t.data[t.off:t.off+n])
	if t.off += n; t.off == len(t.data) {
		t.off = 0
	}
	return n, nil
}

// TestReaderTrickleLinear: a packet whose array arrives a few bytes at a
// time is walked once, not again from its start on every read (which
// made a 64 KiB packet cost the server seconds of CPU): the elements the
// scans walk stay within twice the array's, however the packet is split.
func TestReaderTrickleLinear(t *testing.T) {
	pkt := tricklePacket(t, trickleElems)
	require.LessOrEqual(t, len(pkt), DefaultMaxPacket)
	for _, head := range []int{len(pkt) / 2, 12, 1} {
		t.Run(fmt.Sprintf("head=%d", head), func(t *testing.T) {
			src := &trickleReader{data: pkt, head: head, rng: rand.New(rand.NewPCG(1, 2))}
			r := NewReader(io.LimitReader(src, int64(len(pkt))), 0)
			f, err := r.Next()
			require.NoError(t, err)
			assert.Equal(t, pkt, f.Raw)
			assert.Greater(t, src.reads, (len(pkt)-head)/3, "the packet came a few bytes per read")
			assert.LessOrEqual(t, r.walked, 2*trickleElems, "elements walked for one packet of %d", trickleElems)
			_, err = r.Next()
			assert.ErrorIs(t, err, io.EOF)
		})
	}
}

// BenchmarkReaderTrickle: one 64 KiB packet of 21,840 one-byte strings,
// whole (in reads of up to 64 KiB) and trickled (its first 12 bytes, then
// 1 to 3 bytes per read). One op = one packet: the ratio of the two is
// what trickling a packet costs a server over sending it whole.
func BenchmarkReaderTrickle(b *testing.B) {
	pkt := tricklePacket(b, trickleElems)
	for _, tc := range []struct {
		name string
		src  func() io.Reader
	}{
		{"whole", func() io.Reader { return &loopReader{data: pkt, chunk: len(pkt)} }},
		{"trickled", func() io.Reader { return &trickleReader{data: pkt, head: 12, rng: rand.New(rand.NewPCG(1, 2))} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := NewReader(tc.src(), 0) // a source of its own each run: a packet's start
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := r.Next()
				if err != nil || len(f.Raw) != len(pkt) {
					b.Fatal(len(f.Raw), err)
				}
			}
		})
	}
}

// lowWaterSocket emulates a socket whose peer writes 1 to 3 bytes at a
// time and that honours a low-water mark: a read returns the next 1-3
// bytes, or with a mark of n > 1 the next n (what came while its reader
// slept). Each read is a wake-up of a real reader.
type lowWaterSocket struct {
	data  []byte
	off   int
	rng   *rand.Rand
	mark  int
	marks []int // each mark asked for
	over  []int // offsets where a mark asked past the packet being read
	ends  []int // where the packets end
	reads int
}

func (s *lowWaterSocket) Read(p []byte) (int, error) {
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	s.reads++
	n := 1 + s.rng.IntN(3)
	if s.mark > 1 {
		n = max(n, s.mark)
	}
	n = min(n, len(p), len(s.data)-s.off)
	copy(p, s.data[s.off:s.off+n])
	s.off += n
	return n, nil
}

func (s *lowWaterSocket) SetReadLowWater(n int) error {
	s.marks = append(s.marks, n)
	s.mark = n
	for _, end := range s.ends {
		if s.off < end {
			if s.off+n > end && n > 1 {
				s.over = append(s.over, s.off)
			}
			break
		}
	}
	return nil
}

// TestReaderLowWater: a Reader asks a source with a low-water mark to wait
// for what a large packet still needs at least, never past the packet's
// end (its peer may wait for a reply), and for 1 again before reading
// past it: the trickled 64 KiB packet costs a few dozen wake-ups, not one
// per write. Small packets never cost a call.
func TestReaderLowWater(t *testing.T) {
	pkt := tricklePacket(t, trickleElems)
	chat, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: "hi"}).AppendPacket(nil)
	require.NoError(t, err)
	var data []byte
	var ends []int
	for _, p := range [][]byte{chat, chat, pkt, chat, pkt} {
		data = append(data, p...)
		ends = append(ends, len(data))
	}
	src := &lowWaterSocket{data: data, ends: ends, rng: rand.New(rand.NewPCG(3, 4))}
	r := NewReader(src, 0)
	var got [][]byte
	for {
		f, err := r.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, f.Raw)
		if len(got) == 2 {
			assert.Empty(t, src.marks, "small packets set no mark")
		}
	}
	require.Len(t, got, 5)
	assert.Empty(t, src.over, "marks past the end of the packet being read")
	ones := 0
	for _, m := range src.marks {
		if m == 1 {
			ones++
		}
	}
	assert.Equal(t, 2, ones, "back to 1 after each large packet: %v", src.marks)
	assert.Less(t, src.reads, 150, "wake-ups for two trickled 64 KiB packets (%d writes each) and three chats", len(pkt)/2)
	t.Logf("%d reads, marks %v", src.reads, src.marks)
}

// TestReaderPartial: Partial says whether the last Next stopped inside a
// packet, and which packet of the stream, so that an engine can bound how
// long a begun packet takes.
func TestReaderPartial(t *testing.T) {
	chat, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: "hi"}).AppendPacket(nil)
	require.NoError(t, err)
	src := &stepReader{}
	r := NewReader(src, 0)
	_, ok := r.Partial()
	assert.False(t, ok, "nothing read")

	src.next = [][]byte{chat[:3]}
	_, err = r.Next()
	require.ErrorIs(t, err, errWait)
	n, ok := r.Partial()
	assert.True(t, ok)
	assert.Equal(t, uint64(0), n)

	src.next = [][]byte{chat[3:], chat, chat[:5]}
	for range 2 {
		_, err = r.Next()
		require.NoError(t, err)
	}
	_, err = r.Next()
	require.ErrorIs(t, err, errWait)
	n, ok = r.Partial()
	assert.True(t, ok, "the third packet has begun")
	assert.Equal(t, uint64(2), n)

	src.next = [][]byte{chat[5:]}
	_, err = r.Next()
	require.NoError(t, err)
	_, err = r.Next()
	require.ErrorIs(t, err, errWait)
	_, ok = r.Partial()
	assert.False(t, ok, "stopped between packets")

	src.next = [][]byte{chat[:1]}
	src.fail = io.ErrClosedPipe
	_, err = r.Next()
	require.Error(t, err)
	_, ok = r.Partial()
	assert.False(t, ok, "the stream has failed")
}

// errWait is stepReader's would-block: a timeout, so the Reader retries.
var errWait = waitError{}

type waitError struct{}

func (waitError) Error() string   { return "would block" }
func (waitError) Timeout() bool   { return true }
func (waitError) Temporary() bool { return true }

// stepReader returns its chunks one per read, then errWait (or fail once
// set, after the chunks).
type stepReader struct {
	next [][]byte
	fail error
}

func (s *stepReader) Read(p []byte) (int, error) {
	if len(s.next) == 0 {
		if s.fail != nil {
			return 0, s.fail
		}
		return 0, errWait
	}
	n := copy(p, s.next[0])
	if s.next[0] = s.next[0][n:]; len(s.next[0]) == 0 {
		s.next = s.next[1:]
	}
	return n, nil
}
