package protocol

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gen makes random packets from a fixed seed.
type gen struct{ rng *rand.Rand }

// pieces of random strings: ASCII, NUL, control characters, 2- and 3-byte
// characters, characters beyond the BMP, lone surrogates (kept in their
// 3-byte form; a lone high surrogate is followed by a non-surrogate so that
// it cannot pair up).
var genPieces = []string{
	"a", "Z", "0", " ", "Room1", "Mark", "\x00", "\t", "\x7f", "\u0080", "é", "\u07ff",
	"\u0800", "€", "\uffff", "\ufffd", "\U00010000", "😀", "\U0010ffff",
	"\xed\xb0\x80", "\xed\xbf\xbf", "\xed\xa0\x80x", "\xed\xaf\xbf ",
}

func (g gen) str() string {
	if g.rng.IntN(5) == 0 {
		return ""
	}
	var sb strings.Builder
	for n := g.rng.IntN(12); n >= 0; n-- {
		sb.WriteString(genPieces[g.rng.IntN(len(genPieces))])
	}
	return sb.String()
}

func (g gen) strs() []string {
	n := g.rng.IntN(5)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = g.str()
	}
	return out
}

func (g gen) bytes() []byte {
	n := g.rng.IntN(12)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.IntN(256))
	}
	return b
}

func (g gen) users() []User {
	n := g.rng.IntN(4)
	if n == 0 {
		return nil
	}
	out := make([]User, n)
	for i := range out {
		out[i] = User{g.str(), g.str(), g.str(), g.str(), g.str()}
	}
	return out
}

func (g gen) i32() int32 { return int32(g.rng.Uint32()) }
func (g gen) i64() int64 { return int64(g.rng.Uint64()) }
func (g gen) bool() bool { return g.rng.IntN(2) == 1 }
func (g gen) typ() Type {
	if g.rng.IntN(8) == 0 {
		return Type(g.i32())
	}
	return Type(1 + g.rng.IntN(4))
}

func (g gen) accessRequest(a *Access) {
	a.DefaultRoom, a.AppletVersion, a.DocumentBase, a.CodeBase = g.str(), g.str(), g.str(), g.str()
	a.JavaVendor, a.JavaVendorURL, a.JavaVersion, a.JavaClassVersion = g.str(), g.str(), g.str(), g.str()
	a.OSName, a.OSVersion, a.OSArch = g.str(), g.str(), g.str()
}

func (g gen) accessConfirm(a *Access) {
	a.Result, a.Rooms, a.Challenge = g.i32(), g.strs(), g.bytes()
}

// packet returns a random packet of the given id with only the fields its
// type's layout carries (the others stay zero, as Decode leaves them).
func (g gen) packet(id ID) Packet {
	t := g.typ()
	switch id {
	case IDAccess:
		p := &Access{Type: t}
		if t == Confirm {
			g.accessConfirm(p)
		} else {
			g.accessRequest(p)
		}
		return p
	case IDPacket:
		return &BasePacket{Type: t}
	case IDStreamableError:
		return &StreamableError{Type: t, Text: g.str()}
	case IDAuthenticate:
		if t == Confirm {
			return &Authenticate{Type: t, Result: g.i32(), Rooms: g.strs()}
		}
		return &Authenticate{Type: t, Signature: g.bytes()}
	case IDBeep:
		return &Beep{Type: t, RoomName: g.str(), FromName: g.str(), ToName: g.str()}
	case IDChat:
		return &Chat{Type: t, Question: g.bool(), RoomID: g.i32(), RoomName: g.str(), UserName: g.str(), Text: g.str()}
	case IDCreateRooms:
		return &CreateRooms{Type: t, Rooms: g.strs()}
	case IDEnterPrivate:
		p := &EnterPrivate{Type: t, RoomName: g.str(), FromName: g.str(), ToName: g.str()}
		if t == Indication || t == Confirm {
			p.RoomID, p.Host, p.Profile = g.i32(), g.str(), g.str()
		}
		return p
	case IDEnterRoom:
		p := &EnterRoom{Type: t, Profile: g.str(), RoomName: g.str(), UserName: g.str()}
		switch t {
		case Indication:
			p.Address, p.Member, p.Link = g.str(), g.str(), g.str()
		case Confirm:
			p.Result, p.RoomType, p.Count, p.Users = g.i32(), g.i32(), g.i32(), g.users()
		}
		return p
	case IDExitPrivate:
		return &ExitPrivate{Type: t, RoomID: g.i32(), FromName: g.str()}
	case IDExitRoom:
		return &ExitRoom{Type: t, RoomName: g.str(), UserName: g.str()}
	case IDHalt:
		if t == Confirm {
			return &Halt{Type: t, Allowed: g.bool()}
		}
		return &Halt{Type: t, Password: g.str()}
	case IDKick:
		return &Kick{Type: t, RoomName: g.str(), KickerName: g.str(), UserName: g.str(), UserAddress: g.str(), Method: g.i32()}
	case IDMonitor:
		if t == Confirm {
			return &Monitor{Type: t, Allowed: g.bool()}
		}
		return &Monitor{Type: t, Password: g.str(), Interval: g.i32()}
	case IDPasswordAccess:
		p := &PasswordAccess{Type: t}
		if t == Confirm {
			g.accessConfirm(&p.Access)
			p.Profile = g.str()
			return p
		}
		g.accessRequest(&p.Access)
		p.Member, p.Monitor, p.Admin = g.bool(), g.bool(), g.bool()
		p.MemberName, p.MemberPassword, p.Password = g.str(), g.str(), g.str()
		p.Stage, p.Topic = g.bool(), g.str()
		return p
	case IDPing:
		return &Ping{Type: t}
	case IDReport:
		return &Report{Type: t, Time: g.i64(), FreeMemory: g.i64(), TotalMemory: g.i64(),
			Threads: g.i32(), Connections: g.i32(), UniqueAddresses: g.i32(), Rooms: g.i32(),
			PersonalRooms: g.i32(), PrivateRooms: g.i32(), Received: g.i64(), Sent: g.i64()}
	case IDRoomList:
		return &RoomList{Type: t, Filter: g.str(), Rooms: g.strs()}
	case IDUserList:
		p := &UserList{Type: t, RoomName: g.str()}
		if t == Confirm {
			p.Result, p.RoomType, p.DocumentBase, p.Users = g.i32(), g.i32(), g.str(), g.users()
		}
		return p
	case IDWhisper:
		return &Whisper{Type: t, RoomName: g.str(), FromName: g.str(), ToName: g.str(), Text: g.str()}
	}
	panic("no generator for " + id.String())
}

// encodableIDs are all ids but the decode-only legacy Access.
var encodableIDs = []ID{
	IDAccess, IDPacket, IDStreamableError, IDAuthenticate, IDBeep, IDChat, IDCreateRooms,
	IDEnterPrivate, IDEnterRoom, IDExitPrivate, IDExitRoom, IDHalt, IDKick, IDMonitor,
	IDPasswordAccess, IDPing, IDReport, IDRoomList, IDUserList, IDWhisper,
}

// TestRoundTrip: encode -> decode -> deep equal -> encode -> same bytes, for
// random packets of every type; and the packets concatenated in one stream
// come back one by one through Decode and Reader.
func TestRoundTrip(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(20261121, 1))}
	for _, id := range encodableIDs {
		t.Run(id.String(), func(t *testing.T) {
			var stream []byte
			var want []Packet
			for i := 0; i < 200; i++ {
				p := g.packet(id)
				require.Equal(t, id, p.PacketID())
				b, err := p.AppendPacket(nil)
				require.NoError(t, err, "%#v", p)

				got, err := DecodeMessage(b)
				require.NoError(t, err, "%#v", p)
				require.Equal(t, p, got)

				b2, err := got.AppendPacket(nil)
				require.NoError(t, err)
				require.Equal(t, b, b2)

				stream = append(stream, b...)
				want = append(want, p)
			}
			for i, off := 0, 0; off < len(stream); i++ {
				p, n, err := Decode(stream[off:])
				require.NoError(t, err)
				assert.Equal(t, want[i], p)
				off += n
			}
			r := NewReader(&chunkReader{data: stream, rng: g.rng, max: 50}, 0)
			for i := range want {
				p, err := r.ReadPacket()
				require.NoError(t, err)
				assert.Equal(t, want[i], p)
			}
		})
	}
}

// TestLayoutPerType pins which types use which layout, byte for byte.
func TestLayoutPerType(t *testing.T) {
	s := func(v string) []byte { return AppendRawString(nil, []byte(v)) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	i32 := func(v int32) []byte { return AppendInt32(nil, v) }
	tests := []struct {
		name string
		p    Packet
		body []byte
	}{
		{"EnterRoom response = request layout",
			&EnterRoom{Type: Response, Profile: "p", RoomName: "r", UserName: "u"},
			cat(s("p"), s("r"), s("u"))},
		{"EnterRoom type 7 = request layout",
			&EnterRoom{Type: 7, Profile: "p", RoomName: "r", UserName: "u"},
			cat(s("p"), s("r"), s("u"))},
		{"Access indication = request layout",
			&Access{Type: Indication, DefaultRoom: "d"},
			cat(s("d"), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""))},
		{"Access confirm",
			&Access{Type: Confirm, Result: AccessOK, Rooms: []string{"A"}, Challenge: []byte{9, 8}},
			cat(i32(1), i32(1), s("A"), []byte{2, 9, 8})},
		{"EnterPrivate indication",
			&EnterPrivate{Type: Indication, RoomName: "r", FromName: "f", ToName: "t", RoomID: 5, Host: "h", Profile: "p"},
			cat(s("r"), s("f"), s("t"), i32(5), s("h"), s("p"))},
		{"EnterPrivate response = request layout",
			&EnterPrivate{Type: Response, RoomName: "r", FromName: "f", ToName: "t"},
			cat(s("r"), s("f"), s("t"))},
		{"UserList indication = request layout",
			&UserList{Type: Indication, RoomName: "r"}, s("r")},
		{"UserList confirm",
			&UserList{Type: Confirm, RoomName: "r", Result: UserListOK, RoomType: RoomNormal, DocumentBase: "d",
				Users: []User{{"n", "p", "", "false", "true"}}},
			cat(s("r"), i32(1), i32(1), s("d"), i32(1), s("n"), s("p"), s(""), s("false"), s("true"))},
		{"Halt confirm", &Halt{Type: Confirm, Allowed: true}, []byte{1}},
		{"Halt indication = request layout", &Halt{Type: Indication, Password: "x"}, s("x")},
		{"Monitor request", &Monitor{Type: Request, Password: "x", Interval: 3}, cat(s("x"), i32(3))},
		{"Monitor confirm", &Monitor{Type: Confirm, Allowed: false}, []byte{0}},
		{"Authenticate request", &Authenticate{Type: Request, Signature: []byte{1, 2, 3}}, []byte{3, 1, 2, 3}},
		{"Authenticate confirm", &Authenticate{Type: Confirm, Result: 2}, cat(i32(2), i32(0))},
		{"PasswordAccess confirm",
			&PasswordAccess{Type: Confirm, Access: Access{Result: 5}, Profile: "p"},
			cat(i32(5), i32(0), []byte{0}, s("p"))},
		{"PasswordAccess request",
			&PasswordAccess{Type: Request, Access: Access{OSArch: "a"}, Member: true, Admin: true, MemberName: "m", Stage: true, Topic: "t"},
			cat(s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s(""), s("a"),
				[]byte{1, 0, 1}, s("m"), s(""), s(""), []byte{1}, s("t"))},
		{"CreateRooms", &CreateRooms{Type: Request, Rooms: []string{"a", "b"}}, cat([]byte{2}, s("a"), s("b"))},
		{"Ping response", &Ping{Type: Response}, nil},
		{"Packet", &BasePacket{Type: Request}, nil},
		{"Report indication",
			&Report{Type: Indication, Time: 1, Threads: 2, Sent: 3},
			cat(AppendInt64(nil, 1), make([]byte, 16), i32(2), make([]byte, 20), make([]byte, 8), AppendInt64(nil, 3))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := cat(AppendHeader(nil, tt.p.PacketID(), tt.p.PacketType()), tt.body)
			b, err := tt.p.AppendPacket(nil)
			require.NoError(t, err)
			assert.Equal(t, want, b)
			got, err := DecodeMessage(b)
			require.NoError(t, err)
			assert.Equal(t, tt.p, got)
		})
	}
}
