package protocol

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDAndTypeStrings(t *testing.T) {
	assert.Equal(t, "Chat", IDChat.String())
	assert.Equal(t, "EnterRoom", IDEnterRoom.String())
	assert.Equal(t, "Access", IDAccess.String())
	assert.Equal(t, "AccessLegacy", IDAccessLegacy.String())
	assert.Equal(t, "Packet", IDPacket.String())
	assert.Equal(t, "id(999)", ID(999).String())
	assert.Equal(t, "id(0)", ID(0).String())
	assert.Equal(t, "id(65535)", ID(65535).String())
	assert.True(t, IDWhisper.Known())
	assert.False(t, ID(218).Known())
	assert.False(t, ID(200).Known())

	assert.Equal(t, "request", Request.String())
	assert.Equal(t, "indication", Indication.String())
	assert.Equal(t, "response", Response.String())
	assert.Equal(t, "confirm", Confirm.String())
	assert.Equal(t, "type(7)", Type(7).String())
	assert.Equal(t, "type(-1)", Type(-1).String())
}

func decodeErr(t *testing.T, b []byte) *DecodeError {
	t.Helper()
	_, _, err := Decode(b)
	require.Error(t, err)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	return de
}

func TestDecodeErrorMessages(t *testing.T) {
	// Chat indication whose text is not modified UTF-8.
	b := AppendHeader(nil, IDChat, Indication)
	b = AppendBool(b, false)
	b = AppendInt32(b, 0)
	b = AppendRawString(b, []byte("Room1"))
	b = AppendRawString(b, []byte("a"))
	b = AppendRawString(b, []byte{'x', 0x80})
	de := decodeErr(t, b)
	assert.EqualError(t, de, `protocol: Chat indication: field "text" at byte 21: malformed modified UTF-8`)
	assert.Equal(t, IDChat, de.ID)
	assert.Equal(t, Indication, de.Type)
	assert.Equal(t, "text", de.Field)
	assert.Equal(t, 21, de.Offset)
	assert.ErrorIs(t, de, ErrMalformedString)

	// Unknown id: known as soon as two bytes are there.
	de = decodeErr(t, []byte{0x03, 0xE7})
	assert.EqualError(t, de, `protocol: id(999): field "id" at byte 0: unknown packet id`)
	assert.ErrorIs(t, de, ErrUnknownID)
	assert.Equal(t, ID(999), de.ID)

	// Nothing yet.
	de = decodeErr(t, []byte{0x00})
	assert.EqualError(t, de, `protocol: packet header: field "id" at byte 0: incomplete packet`)
	assert.ErrorIs(t, de, ErrIncomplete)

	de = decodeErr(t, []byte{0x00, 0xCB, 0, 0})
	assert.EqualError(t, de, `protocol: Chat: field "type" at byte 2: incomplete packet`)

	// A user in a user[].
	er := &EnterRoom{Type: Confirm, Users: []User{{Name: "a"}, {Name: "b", Profile: "p"}}}
	b, err := er.AppendPacket(nil)
	require.NoError(t, err)
	i := bytes.LastIndexByte(b, 'p')
	b[i] = 0xFF
	de = decodeErr(t, b)
	assert.Equal(t, "users[1].profile", de.Field)
	assert.Equal(t, i-2, de.Offset)
	assert.EqualError(t, de, `protocol: EnterRoom confirm: field "users[1].profile" at byte `+strconv.Itoa(i-2)+`: malformed modified UTF-8`)

	// A str[] element.
	rl := &RoomList{Type: Confirm, Rooms: []string{"A", "B", "C"}}
	b, err = rl.AppendPacket(nil)
	require.NoError(t, err)
	b[len(b)-1] = 0xC0
	de = decodeErr(t, b)
	assert.Equal(t, "rooms[2]", de.Field)

	// Trailing data.
	b, err = (&Ping{Type: Request}).AppendPacket(nil)
	require.NoError(t, err)
	_, err = DecodeMessage(append(b, 0))
	assert.ErrorIs(t, err, ErrTrailingData)
	assert.EqualError(t, err, `protocol: Ping request at byte 6: trailing data after the packet`)
}

// TestHugeCounts: counts are checked against the remaining bytes before
// anything is allocated for them.
func TestHugeCounts(t *testing.T) {
	accessConfirm := func(count uint32) []byte {
		b := AppendHeader(nil, IDAccess, Confirm)
		b = AppendInt32(b, AccessOK)
		b = AppendInt32(b, int32(count))
		return append(b, make([]byte, 20-len(b))...) // a 20-byte input
	}
	enterConfirm := func(count uint32) []byte {
		b, err := (&EnterRoom{Type: Confirm}).AppendPacket(nil)
		require.NoError(t, err)
		b = b[:len(b)-4]
		return AppendInt32(b, int32(count))
	}

	// 2^31 reads as a negative i32: a bad count at once.
	b := accessConfirm(1 << 31)
	require.Len(t, b, 20)
	de := decodeErr(t, b)
	assert.ErrorIs(t, de, ErrBadCount)
	assert.Equal(t, "rooms", de.Field)
	assert.Equal(t, 10, de.Offset)
	assert.EqualError(t, de, `protocol: Access confirm: field "rooms" at byte 10: bad count`)
	assert.ErrorIs(t, decodeErr(t, enterConfirm(1<<31)), ErrBadCount)
	assert.ErrorIs(t, decodeErr(t, enterConfirm(0xFFFFFFFF)), ErrBadCount)

	// 2^31-1 cannot fit in what is there: incomplete for Decode ...
	de = decodeErr(t, accessConfirm(1<<31-1))
	assert.ErrorIs(t, de, ErrIncomplete)
	assert.Equal(t, "rooms", de.Field)
	assert.ErrorIs(t, decodeErr(t, enterConfirm(1<<31-1)), ErrIncomplete)

	// ... and too large for a Reader, before reading any further.
	for _, in := range [][]byte{accessConfirm(1<<31 - 1), enterConfirm(1<<31 - 1), accessConfirm(40000)} {
		r := NewReader(io.MultiReader(bytes.NewReader(in), neverReader{t}), 0)
		_, err := r.Next()
		assert.ErrorIs(t, err, ErrTooLarge)
	}

	// Nothing significant is allocated: at most the returned error.
	for _, in := range [][]byte{accessConfirm(1 << 31), accessConfirm(1<<31 - 1), enterConfirm(1<<31 - 1)} {
		allocs := testing.AllocsPerRun(100, func() { _, _, _ = Decode(in) })
		assert.LessOrEqual(t, allocs, 1.0)
	}
	var ms1, ms2 runtimeMem
	ms1.read()
	for i := 0; i < 100; i++ {
		_, _, _ = Decode(enterConfirm(1<<31 - 1))
	}
	ms2.read()
	assert.Less(t, ms2.totalAlloc-ms1.totalAlloc, uint64(1<<20), "bytes allocated by 100 decodes")
}

// neverReader fails the test if read: the Reader must give up before.
type neverReader struct{ t *testing.T }

func (n neverReader) Read([]byte) (int, error) {
	n.t.Error("Reader read past a packet it should have refused")
	return 0, io.EOF
}

func TestTooLarge(t *testing.T) {
	s := readCapture(t, captureDir+"/stock/conn001-s2c.hex")
	pkts := splitCapture(t, s)
	require.Equal(t, IDEnterRoom, pkts[1].Packet.PacketID())
	size := len(pkts[1].Raw) // 141: the EnterRoom confirm

	r := NewReader(bytes.NewReader(s.Data), size-1)
	f, err := r.Next()
	require.NoError(t, err, "the 97-byte Access confirm fits")
	assert.Equal(t, IDAccess, f.ID)
	_, err = r.Next()
	require.ErrorIs(t, err, ErrTooLarge)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, IDEnterRoom, de.ID)
	assert.Equal(t, Confirm, de.Type)
	assert.Contains(t, err.Error(), "protocol: EnterRoom confirm: field ")
	_, err2 := r.Next()
	assert.Equal(t, err, err2, "sticky")

	// Exactly maxPacket is fine, and the buffer never exceeds it.
	r = NewReader(bytes.NewReader(s.Data), size)
	got, err := readFrames(r)
	assert.Equal(t, io.EOF, err)
	assert.Len(t, got, len(pkts))
	assert.LessOrEqual(t, cap(r.buf), size)

	// A maxPacket smaller than a header.
	r = NewReader(bytes.NewReader(s.Data), 4)
	_, err = r.Next()
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestReaderBufferStaysSmall(t *testing.T) {
	var data []byte
	for _, s := range allCaptures(t) {
		if strings.HasSuffix(s.Name, "c2s") {
			data = append(data, s.Data...)
		}
	}
	r := NewReader(bytes.NewReader(data), 0)
	_, err := readFrames(r)
	require.Equal(t, io.EOF, err)
	assert.Equal(t, initialBuffer, cap(r.buf), "client packets fit the initial buffer")

	big := &EnterRoom{Type: Confirm}
	for i := 0; i < 40; i++ {
		big.Users = append(big.Users, User{Name: "Mark", Profile: strings.Repeat("p", 100), Member: "false", Link: "false"})
	}
	b, err := big.AppendPacket(nil)
	require.NoError(t, err)
	r = NewReader(bytes.NewReader(b), 0)
	p, err := r.ReadPacket()
	require.NoError(t, err)
	assert.Equal(t, big, p)
	assert.GreaterOrEqual(t, cap(r.buf), len(b))
	assert.LessOrEqual(t, cap(r.buf), 2*len(b))

	// After the large packet the buffer goes back to its first size (on
	// a later read: the frame stays valid until then), also when the
	// large packet came with more bytes behind it; a large packet that
	// follows grows it again.
	small, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "u", Text: "hello"}).AppendPacket(nil)
	require.NoError(t, err)
	for _, stream := range [][]byte{
		bytes.Join([][]byte{b, small, small}, nil),
		bytes.Join([][]byte{b, small, b, small}, nil),
	} {
		r = NewReader(&chunkReader{data: stream, rng: rand.New(rand.NewPCG(1, 2)), max: 700}, 0)
		f, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, IDEnterRoom, f.ID)
		require.Greater(t, cap(r.buf), initialBuffer)
		raw := bytes.Clone(f.Raw)
		assert.Equal(t, b, raw)
		for {
			f, err = r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			if f.ID == IDChat {
				assert.Equal(t, small, f.Raw)
			} else {
				assert.Equal(t, b, f.Raw, "the large packet again, whole")
			}
		}
		assert.Equal(t, initialBuffer, cap(r.buf), "the buffer is small again once the large packets are read")
	}
}

func TestTruncatedPackets(t *testing.T) {
	for _, raw := range capturedPackets(t) {
		for cut := 0; cut < len(raw); cut++ {
			_, _, err := Decode(raw[:cut])
			require.ErrorIs(t, err, ErrIncomplete, "% x", raw[:cut])
			_, err = DecodeMessage(raw[:cut])
			require.ErrorIs(t, err, ErrIncomplete)
		}
	}
}

func TestLegacyAccess(t *testing.T) {
	req := &Access{Type: Request, DefaultRoom: "Room1", AppletVersion: "2.1"}
	b, err := req.AppendPacket(nil)
	require.NoError(t, err)
	legacy := append([]byte{0, 17}, legacyClass...)
	legacy = append(legacy, b[2:]...)

	p, n, err := Decode(legacy)
	require.NoError(t, err)
	assert.Equal(t, len(legacy), n)
	want := *req
	want.Legacy = true
	assert.Equal(t, &want, p)
	assert.Equal(t, IDAccessLegacy, p.PacketID())

	r := NewReader(bytes.NewReader(legacy), 0)
	f, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, IDAccessLegacy, f.ID)
	assert.Equal(t, Request, f.Type)
	assert.Equal(t, b[6:], f.Body)

	out, err := p.AppendPacket([]byte("x"))
	assert.ErrorIs(t, err, ErrLegacyAccess)
	assert.Equal(t, []byte("x"), out)

	// The legacy confirm has no challenge.
	cnf := append([]byte{0, 17}, legacyClass...)
	cnf = AppendInt32(cnf, int32(Confirm))
	cnf = AppendInt32(cnf, AccessOK)
	cnf = AppendInt32(cnf, 1)
	cnf = AppendRawString(cnf, []byte("Room1"))
	p, err = DecodeMessage(cnf)
	require.NoError(t, err)
	assert.Equal(t, &Access{Type: Confirm, Result: AccessOK, Rooms: []string{"Room1"}, Legacy: true}, p)
}

func TestBoolAnyNonZero(t *testing.T) {
	b := AppendHeader(nil, IDHalt, Confirm)
	b = append(b, 0x7F)
	p, err := DecodeMessage(b)
	require.NoError(t, err)
	assert.Equal(t, &Halt{Type: Confirm, Allowed: true}, p)
}

func TestCreateRoomsNameLimit(t *testing.T) {
	ok := &CreateRooms{Type: Request, Rooms: []string{strings.Repeat("é", 127), strings.Repeat("😀", 63) + "a"}}
	b, err := ok.AppendPacket(nil)
	require.NoError(t, err)
	p, err := DecodeMessage(b)
	require.NoError(t, err)
	assert.Equal(t, ok, p)

	long := &CreateRooms{Type: Request, Rooms: []string{"a", strings.Repeat("😀", 64)}}
	_, err = long.AppendPacket(nil)
	assert.ErrorIs(t, err, ErrStringTooLong)

	b = AppendHeader(nil, IDCreateRooms, Request)
	b = append(b, 2)
	b = AppendRawString(b, []byte("a"))
	b = AppendRawString(b, bytes.Repeat([]byte("x"), 128))
	de := decodeErr(t, b)
	assert.ErrorIs(t, de, ErrStringTooLong)
	assert.Equal(t, "rooms[1]", de.Field)
	assert.Equal(t, 10, de.Offset)

	many := &CreateRooms{Type: Request, Rooms: make([]string, 256)}
	_, err = many.AppendPacket(nil)
	assert.ErrorIs(t, err, ErrBadCount)
}

func TestBytes8Limit(t *testing.T) {
	_, err := (&Authenticate{Type: Request, Signature: make([]byte, 255)}).AppendPacket(nil)
	assert.NoError(t, err)
	_, err = (&Authenticate{Type: Request, Signature: make([]byte, 256)}).AppendPacket(nil)
	assert.ErrorIs(t, err, ErrStringTooLong)
	var ee *EncodeError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, "signature", ee.Field)
}
