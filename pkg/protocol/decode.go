package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
)

// legacyClass sits between the id and the type of a legacy Access (id 17).
const legacyClass = "COM.volano.Access"

// dec walks one packet. In skip mode it only finds the packet's length (no
// validation of string contents, no allocation); otherwise it also checks
// and converts every field. The first failure is recorded in plain fields
// and stops all further reads; error() turns it into a *DecodeError, so that
// the common "need more bytes" case costs no allocation.
type dec struct {
	b     []byte // input, from the start of the packet
	off   int    // read position in b
	bias  int    // added to offsets in errors (ParseChat works on a body)
	limit int    // largest acceptable packet; beyond it -> ErrTooLarge
	skip  bool

	s string // string(b), made on first need: decoded strings are substrings of it

	id     ID
	typ    Type
	hdr    uint8 // hdrFull, hdrIDOnly or hdrNone
	hdrLen int   // header length once read

	arr  string // array being read ("users", "rooms"), for error field names
	elem int

	walked int // array elements walked (a Reader sums them: tests check the work)

	// memo, when set (a Reader's scan), is where the last scan of this
	// packet stopped inside an array; a scan resumes there.
	memo *scanMemo

	// failure
	code    error
	field   string
	errArr  string
	errElem int
	at      int
	need    int // with ErrIncomplete: the packet needs at least this many bytes
}

// scanMemo is how far a scan of a partial packet got inside its array:
// the elements before elem, which end at off, are complete. A rescan
// with more bytes walks the header and the few fields before the array
// again, and resumes the array at elem, so that each element is walked
// once however the packet arrives (walked from the start on every read,
// a 64 KiB packet trickled a few bytes per read cost seconds of CPU).
// Offsets count from the packet's first byte; every packet has at most
// one array.
type scanMemo struct {
	at   int // offset of the array's first element; 0: no memo
	elem int
	off  int
}

// resume starts the walk of the array whose first element is at d.off:
// it returns the element to start at, having moved d.off to it.
func (d *dec) resume() int {
	if m := d.memo; m != nil && m.at == d.off && m.at != 0 {
		d.off = m.off
		return m.elem
	}
	return 0
}

// walkedTo records where to resume after the walk of an array of n
// elements of at least size bytes that began at start: past its end when
// it is complete, else at the element i, which began at off, that was not
// all there. Then the packet needs the bytes of the elements after i too
// (at least size each): a Reader waits for them before it scans again.
func (d *dec) walkedTo(start, i, off, n, size int) {
	if d.code == ErrIncomplete {
		d.need = min(d.need+(n-i-1)*size, d.limit)
	}
	switch {
	case d.memo == nil:
	case d.code == nil:
		*d.memo = scanMemo{at: start, elem: i, off: d.off}
	case d.code == ErrIncomplete:
		*d.memo = scanMemo{at: start, elem: i, off: off}
	}
}

func (d *dec) error() error {
	if d.code == nil {
		return nil
	}
	f := d.field
	if d.errArr != "" {
		if f == "" {
			f = fmt.Sprintf("%s[%d]", d.errArr, d.errElem)
		} else {
			f = fmt.Sprintf("%s[%d].%s", d.errArr, d.errElem, f)
		}
	}
	return &DecodeError{ID: d.id, Type: d.typ, Field: f, Offset: d.at + d.bias, Err: d.code, hdr: d.hdr}
}

func (d *dec) fail(field string, at int, code error) {
	d.code, d.field, d.at = code, field, at
	d.errArr, d.errElem = d.arr, d.elem
}

// incomplete records that the packet needs at least need bytes.
func (d *dec) incomplete(field string, at, need int) {
	if need > d.limit {
		d.fail(field, at, ErrTooLarge)
		return
	}
	d.fail(field, at, ErrIncomplete)
	d.need = need
}

// has reports whether n more bytes are there, recording a failure if not.
func (d *dec) has(field string, n int) bool {
	if d.code != nil {
		return false
	}
	if n > len(d.b)-d.off {
		d.incomplete(field, d.off, d.off+n)
		return false
	}
	return true
}

func (d *dec) u8(field string) byte {
	if !d.has(field, 1) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *dec) bool(field string) bool { return d.u8(field) != 0 }

func (d *dec) i32(field string) int32 {
	if !d.has(field, 4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.b[d.off:]))
	d.off += 4
	return v
}

func (d *dec) i64(field string) int64 {
	if !d.has(field, 8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return v
}

// raw reads a str and returns its bytes, validated unless in skip mode.
func (d *dec) raw(field string) []byte {
	at := d.off
	if !d.has(field, 2) {
		return nil
	}
	n := int(binary.BigEndian.Uint16(d.b[d.off:]))
	if n > len(d.b)-d.off-2 {
		d.incomplete(field, at, d.off+2+n)
		return nil
	}
	r := d.b[d.off+2 : d.off+2+n]
	d.off += 2 + n
	if !d.skip {
		if ok, _ := scanMUTF8(r); !ok {
			d.fail(field, at, ErrMalformedString)
			return nil
		}
	}
	return r
}

// str reads a str as a Go string. Strings whose bytes are already Go's
// UTF-8 are substrings of one copy of the packet.
func (d *dec) str(field string) string {
	at := d.off
	if !d.has(field, 2) {
		return ""
	}
	n := int(binary.BigEndian.Uint16(d.b[d.off:]))
	if n > len(d.b)-d.off-2 {
		d.incomplete(field, at, d.off+2+n)
		return ""
	}
	start := d.off + 2
	d.off = start + n
	if d.skip || n == 0 {
		return ""
	}
	r := d.b[start:d.off]
	ok, same := scanMUTF8(r)
	if !ok {
		d.fail(field, at, ErrMalformedString)
		return ""
	}
	if !same {
		return string(appendDecoded(make([]byte, 0, n), r))
	}
	if d.s == "" {
		d.s = string(d.b)
	}
	return d.s[start:d.off]
}

// count reads an i32 element count and checks that count elements of at
// least min bytes each can fit, before anything is allocated for them.
func (d *dec) count(field string, min int) int {
	at := d.off
	v := d.i32(field)
	if d.code != nil {
		return 0
	}
	if v < 0 {
		d.fail(field, at, ErrBadCount)
		return 0
	}
	if need := int64(v) * int64(min); need > int64(len(d.b)-d.off) {
		total := int64(d.off) + need
		if total > math.MaxInt32 {
			total = math.MaxInt32
		}
		d.incomplete(field, at, int(total))
		return 0
	}
	return int(v)
}

// strs reads a str[] (i32 count); nil when empty.
func (d *dec) strs(field string) []string {
	n := d.count(field, 2)
	return d.strElems(field, n)
}

// strs8 reads a str[]8 (u8 count) of names of at most maxChars characters.
func (d *dec) strs8(field string, maxChars int) []string {
	at := d.off
	n := int(d.u8(field))
	if d.code != nil {
		return nil
	}
	if 2*n > len(d.b)-d.off {
		d.incomplete(field, at, d.off+2*n)
		return nil
	}
	if n == 0 {
		return nil
	}
	var out []string
	start, i, at := d.off, 0, d.off
	if !d.skip {
		out = make([]string, n)
	} else {
		i = d.resume()
	}
	d.arr = field
	for ; i < n; i++ {
		d.elem = i
		d.walked++
		at = d.off
		s := d.str("")
		if d.code != nil {
			break
		}
		if out != nil {
			if utf16Units(s) > maxChars {
				d.fail("", at, ErrStringTooLong)
				break
			}
			out[i] = s
		}
	}
	d.arr = ""
	d.walkedTo(start, i, at, n, 2)
	if d.code != nil {
		return nil
	}
	return out
}

func (d *dec) strElems(field string, n int) []string {
	if d.code != nil || n == 0 {
		return nil
	}
	var out []string
	start, i, at := d.off, 0, d.off
	if !d.skip {
		out = make([]string, n)
	} else {
		i = d.resume()
	}
	d.arr = field
	for ; i < n; i++ {
		d.elem = i
		d.walked++
		at = d.off
		s := d.str("")
		if d.code != nil {
			break
		}
		if out != nil {
			out[i] = s
		}
	}
	d.arr = ""
	d.walkedTo(start, i, at, n, 2)
	if d.code != nil {
		return nil
	}
	return out
}

// bytes8 reads a u8 length and that many raw bytes; nil when empty.
func (d *dec) bytes8(field string) []byte {
	at := d.off
	n := int(d.u8(field))
	if d.code != nil {
		return nil
	}
	if n > len(d.b)-d.off {
		d.incomplete(field, at, d.off+n)
		return nil
	}
	r := d.b[d.off : d.off+n]
	d.off += n
	if d.skip || n == 0 {
		return nil
	}
	return append([]byte(nil), r...)
}

// minUser is the smallest encoded User: five empty strs.
const minUser = 10

// users reads a user[] (i32 count); nil when empty.
func (d *dec) users(field string) []User {
	n := d.count(field, minUser)
	if d.code != nil || n == 0 {
		return nil
	}
	var out []User
	start, i, at := d.off, 0, d.off
	if !d.skip {
		out = make([]User, n)
	} else {
		i = d.resume()
	}
	d.arr = field
	for ; i < n; i++ {
		d.elem = i
		d.walked++
		at = d.off
		var u User
		u.Name = d.str("name")
		u.Profile = d.str("profile")
		u.Host = d.str("host")
		u.Member = d.str("member")
		u.Link = d.str("link")
		if d.code != nil {
			break
		}
		if out != nil {
			out[i] = u
		}
	}
	d.arr = ""
	d.walkedTo(start, i, at, n, minUser)
	if d.code != nil {
		return nil
	}
	return out
}

// header reads the id and the type (and the class name of a legacy Access).
func (d *dec) header() {
	d.hdr = hdrNone
	if !d.has("id", 2) {
		return
	}
	d.id = ID(binary.BigEndian.Uint16(d.b))
	d.off = 2
	d.hdr = hdrIDOnly
	if !d.id.Known() {
		d.fail("id", 0, ErrUnknownID)
		return
	}
	if d.id == IDAccessLegacy {
		// The class name is skipped, not checked.
		if !d.has("class", len(legacyClass)) {
			return
		}
		d.off += len(legacyClass)
	}
	t := d.i32("type")
	if d.code != nil {
		return
	}
	d.typ = Type(t)
	d.hdr = hdrFull
	d.hdrLen = d.off
}

// full decodes the packet whose header d has read. Concrete calls (no
// interface) keep d on the caller's stack.
func (d *dec) full() Packet {
	switch d.id {
	case IDAccess, IDAccessLegacy:
		p := new(Access)
		p.decode(d)
		return p
	case IDPacket:
		p := new(BasePacket)
		p.decode(d)
		return p
	case IDStreamableError:
		p := new(StreamableError)
		p.decode(d)
		return p
	case IDAuthenticate:
		p := new(Authenticate)
		p.decode(d)
		return p
	case IDBeep:
		p := new(Beep)
		p.decode(d)
		return p
	case IDChat:
		p := new(Chat)
		p.decode(d)
		return p
	case IDCreateRooms:
		p := new(CreateRooms)
		p.decode(d)
		return p
	case IDEnterPrivate:
		p := new(EnterPrivate)
		p.decode(d)
		return p
	case IDEnterRoom:
		p := new(EnterRoom)
		p.decode(d)
		return p
	case IDExitPrivate:
		p := new(ExitPrivate)
		p.decode(d)
		return p
	case IDExitRoom:
		p := new(ExitRoom)
		p.decode(d)
		return p
	case IDHalt:
		p := new(Halt)
		p.decode(d)
		return p
	case IDKick:
		p := new(Kick)
		p.decode(d)
		return p
	case IDMonitor:
		p := new(Monitor)
		p.decode(d)
		return p
	case IDPasswordAccess:
		p := new(PasswordAccess)
		p.decode(d)
		return p
	case IDPing:
		p := new(Ping)
		p.decode(d)
		return p
	case IDReport:
		p := new(Report)
		p.decode(d)
		return p
	case IDRoomList:
		p := new(RoomList)
		p.decode(d)
		return p
	case IDUserList:
		p := new(UserList)
		p.decode(d)
		return p
	case IDWhisper:
		p := new(Whisper)
		p.decode(d)
		return p
	}
	return nil
}

// scan finds the length of the packet at the start of d.b without
// allocating: d.off is the length when d.code is nil.
func (d *dec) scan() {
	d.skip = true
	d.header()
	if d.code != nil {
		return
	}
	// Each case decodes into a value on the stack; in skip mode nothing is
	// allocated.
	switch d.id {
	case IDAccess, IDAccessLegacy:
		var p Access
		p.decode(d)
	case IDPacket, IDPing:
	case IDStreamableError:
		var p StreamableError
		p.decode(d)
	case IDAuthenticate:
		var p Authenticate
		p.decode(d)
	case IDBeep:
		var p Beep
		p.decode(d)
	case IDChat:
		var p Chat
		p.decode(d)
	case IDCreateRooms:
		var p CreateRooms
		p.decode(d)
	case IDEnterPrivate:
		var p EnterPrivate
		p.decode(d)
	case IDEnterRoom:
		var p EnterRoom
		p.decode(d)
	case IDExitPrivate:
		var p ExitPrivate
		p.decode(d)
	case IDExitRoom:
		var p ExitRoom
		p.decode(d)
	case IDHalt:
		var p Halt
		p.decode(d)
	case IDKick:
		var p Kick
		p.decode(d)
	case IDMonitor:
		var p Monitor
		p.decode(d)
	case IDPasswordAccess:
		var p PasswordAccess
		p.decode(d)
	case IDReport:
		var p Report
		p.decode(d)
	case IDRoomList:
		var p RoomList
		p.decode(d)
	case IDUserList:
		var p UserList
		p.decode(d)
	case IDWhisper:
		var p Whisper
		p.decode(d)
	}
}

// Decode decodes the first packet in b and returns it with its length in
// bytes. If b holds only part of a packet the error wraps ErrIncomplete
// (b may then be retried with more bytes); other errors are fatal for the
// stream. Every error is a *DecodeError naming the packet and the field.
//
// The packet is returned as a pointer (*Chat, *EnterRoom, ...). Decode does
// not trim any field (see the package doc), and the strings it returns
// share one allocation per packet.
func Decode(b []byte) (Packet, int, error) {
	d := dec{b: b, limit: math.MaxInt}
	d.scan()
	if d.code != nil {
		return nil, 0, d.error()
	}
	n := d.off
	d = dec{b: b[:n:n], limit: math.MaxInt}
	d.header()
	p := d.full()
	if d.code != nil {
		return nil, 0, d.error()
	}
	return p, n, nil
}

// DecodeMessage decodes b as exactly one packet, as carried by a WebSocket
// message. Trailing bytes are an error (ErrTrailingData), and so is a
// truncated packet (ErrIncomplete).
func DecodeMessage(b []byte) (Packet, error) {
	p, n, err := Decode(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, &DecodeError{ID: p.PacketID(), Type: p.PacketType(), Offset: n, Err: ErrTrailingData}
	}
	return p, nil
}

// utf16Units is Java's String.length() of a Go string as produced by
// DecodeString: a 4-byte character counts 2, anything else 1 per character
// (a kept lone surrogate is one 3-byte character).
func utf16Units(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c&0xC0 != 0x80:
			n++
			if c >= 0xF0 {
				n++
			}
		}
	}
	return n
}
