package server

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnLayout: what relaying a chat to a connection touches is on its
// first cache line, what a chat from it touches on the event loops
// (beyond its lock) on the second, and its size class is whole lines
// (448 bytes: seven), so that the lines are its own.
func TestConnLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is for 64-bit pointers")
	}
	var c conn
	end := func(off, size uintptr) uintptr { return off + size }
	for _, f := range []uintptr{
		end(unsafe.Offsetof(c.mu), unsafe.Sizeof(c.mu)),
		end(unsafe.Offsetof(c.fd), 4),
		end(unsafe.Offsetof(c.ws), 8),
		end(unsafe.Offsetof(c.closed), 1),
		end(unsafe.Offsetof(c.flushing), 1),
		end(unsafe.Offsetof(c.accessed), 1),
		end(unsafe.Offsetof(c.lingering), unsafe.Sizeof(c.lingering)),
		end(unsafe.Offsetof(c.taken), 8),
		end(unsafe.Offsetof(c.eng), unsafe.Sizeof(c.eng)),
	} {
		assert.LessOrEqual(t, f, uintptr(64), "conn: relay fields on the first line")
	}
	for _, f := range []uintptr{
		unsafe.Offsetof(c.s), unsafe.Offsetof(c.reader), unsafe.Offsetof(c.first),
		unsafe.Offsetof(c.byRoom), unsafe.Offsetof(c.scratch), unsafe.Offsetof(c.packets),
	} {
		assert.GreaterOrEqual(t, f, uintptr(64), "conn: a chat's fields on the second line")
	}
	assert.LessOrEqual(t, end(unsafe.Offsetof(c.scratch), unsafe.Sizeof(c.scratch)), uintptr(128))
	assert.LessOrEqual(t, end(unsafe.Offsetof(c.packets), 8), uintptr(128))
	assert.Greater(t, unsafe.Sizeof(c), uintptr(384), "conn: in the 448-byte size class")
	assert.LessOrEqual(t, unsafe.Sizeof(c), uintptr(448), "conn: in the 448-byte size class")
}

// TestRoomLayout: a chat's lock, receivers and room name are on the
// room's first line, the name's bytes on the second, and the room is a
// size class of whole lines.
func TestRoomLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is for 64-bit pointers")
	}
	var r room
	assert.LessOrEqual(t, unsafe.Offsetof(r.nameRaw)+unsafe.Sizeof(r.nameRaw), uintptr(64))
	assert.LessOrEqual(t, unsafe.Offsetof(r.conns)+unsafe.Sizeof(r.conns), uintptr(64))
	assert.LessOrEqual(t, unsafe.Offsetof(r.raw)+unsafe.Sizeof(r.raw), uintptr(128))
	assert.LessOrEqual(t, unsafe.Offsetof(r.touched)+8, uintptr(128))
	assert.Equal(t, uintptr(192), unsafe.Sizeof(r))
}

// TestRoomNameInline: a short room name is kept in the room; a long one
// elsewhere; both travel the same.
func TestRoomNameInline(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	short := s.addRoomLocked("Room9500", false, "")
	assert.Equal(t, []byte("Room9500"), short.nameRaw)
	assert.Equal(t, unsafe.Pointer(&short.raw[0]), unsafe.Pointer(unsafe.SliceData(short.nameRaw)))
	long := s.addRoomLocked("A room whose name is longer than thirty-two bytes", false, "")
	assert.Equal(t, []byte("A room whose name is longer than thirty-two bytes"), long.nameRaw)
	assert.Zero(t, short.raw[len(short.nameRaw)], "the inline name is not grown into")
	assert.Equal(t, len(short.nameRaw), cap(short.nameRaw))
}

// TestMemberNameInline: a short user name travels from the member's own
// bytes, a long one from its own allocation.
func TestMemberNameInline(t *testing.T) {
	m := newMember(nil, nil, "Mark1", "")
	assert.Equal(t, []byte("Mark1"), m.nameRaw)
	assert.Equal(t, unsafe.Pointer(&m.raw[0]), unsafe.Pointer(unsafe.SliceData(m.nameRaw)))
	assert.Equal(t, len(m.nameRaw), cap(m.nameRaw))
	long := newMember(nil, nil, "a name of more than 24 bytes", "")
	assert.Equal(t, []byte("a name of more than 24 bytes"), long.nameRaw)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		assert.Equal(t, uintptr(96), unsafe.Sizeof(*m))
	}
}
