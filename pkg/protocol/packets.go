package protocol

// Packet is one VOLANO packet. Decode returns pointers to the structs of
// this package (*Chat, *EnterRoom, ...), and the methods have pointer
// receivers.
type Packet interface {
	// PacketID returns the packet id.
	PacketID() ID
	// PacketType returns the packet type (the Type field).
	PacketType() Type
	// AppendPacket appends the whole packet, header and body, to b. If a
	// field cannot be encoded (a string over 65535 encoded bytes, a Go
	// string that is not UTF-8, ...) it returns b unchanged and an
	// *EncodeError.
	AppendPacket(b []byte) ([]byte, error)
}

// User is one entry of a user[] (EnterRoom and UserList confirms). Member
// and Link are the strings "true" or "false" on the wire; they are kept as
// strings so that any value survives a round trip.
type User struct {
	Name, Profile, Host, Member, Link string
}

// Access (id 1) opens a session. Request: the 11 strings. Confirm: Result,
// Rooms and Challenge. Any type other than Confirm uses the request layout.
//
// Legacy is set by Decode for the 2.1 form (id 17, whose header holds the 17
// bytes "COM.volano.Access" between the id and the type, and whose confirm
// has no challenge). AppendPacket refuses a Legacy Access (ErrLegacyAccess).
type Access struct {
	Type Type

	// request
	DefaultRoom      string // trimmed by the server
	AppletVersion    string
	DocumentBase     string
	CodeBase         string
	JavaVendor       string
	JavaVendorURL    string
	JavaVersion      string
	JavaClassVersion string
	OSName           string
	OSVersion        string
	OSArch           string

	// confirm
	Result    int32 // AccessOK, ...
	Rooms     []string
	Challenge []byte // bytes8; nil when empty

	Legacy bool
}

func (p *Access) PacketID() ID {
	if p.Legacy {
		return IDAccessLegacy
	}
	return IDAccess
}
func (p *Access) PacketType() Type { return p.Type }

func (p *Access) decode(d *dec) {
	p.Type = d.typ
	p.Legacy = d.id == IDAccessLegacy
	if p.Type == Confirm {
		p.decodeConfirm(d)
	} else {
		p.decodeRequest(d)
	}
}

func (p *Access) decodeRequest(d *dec) {
	p.DefaultRoom = d.str("defaultRoom")
	p.AppletVersion = d.str("appletVersion")
	p.DocumentBase = d.str("documentBase")
	p.CodeBase = d.str("codeBase")
	p.JavaVendor = d.str("javaVendor")
	p.JavaVendorURL = d.str("javaVendorUrl")
	p.JavaVersion = d.str("javaVersion")
	p.JavaClassVersion = d.str("javaClassVersion")
	p.OSName = d.str("osName")
	p.OSVersion = d.str("osVersion")
	p.OSArch = d.str("osArch")
}

func (p *Access) decodeConfirm(d *dec) {
	p.Result = d.i32("result")
	p.Rooms = d.strs("rooms")
	if !p.Legacy {
		p.Challenge = d.bytes8("challenge")
	}
}

func (p *Access) AppendPacket(b []byte) ([]byte, error) {
	if p.Legacy {
		return b, &EncodeError{ID: IDAccessLegacy, Type: p.Type, Err: ErrLegacyAccess}
	}
	e := newEnc(b, IDAccess, p.Type)
	if p.Type == Confirm {
		p.encodeConfirm(&e)
	} else {
		p.encodeRequest(&e)
	}
	return e.done()
}

func (p *Access) encodeRequest(e *enc) {
	e.str("defaultRoom", p.DefaultRoom)
	e.str("appletVersion", p.AppletVersion)
	e.str("documentBase", p.DocumentBase)
	e.str("codeBase", p.CodeBase)
	e.str("javaVendor", p.JavaVendor)
	e.str("javaVendorUrl", p.JavaVendorURL)
	e.str("javaVersion", p.JavaVersion)
	e.str("javaClassVersion", p.JavaClassVersion)
	e.str("osName", p.OSName)
	e.str("osVersion", p.OSVersion)
	e.str("osArch", p.OSArch)
}

func (p *Access) encodeConfirm(e *enc) {
	e.i32(p.Result)
	e.strs("rooms", p.Rooms)
	e.bytes8("challenge", p.Challenge)
}

// BasePacket (id 101) is the bare base packet: header only.
type BasePacket struct {
	Type Type
}

func (p *BasePacket) PacketID() ID     { return IDPacket }
func (p *BasePacket) PacketType() Type { return p.Type }
func (p *BasePacket) decode(d *dec)    { p.Type = d.typ }
func (p *BasePacket) AppendPacket(b []byte) ([]byte, error) {
	return AppendHeader(b, IDPacket, p.Type), nil
}

// StreamableError (id 102) carries the text of an error the server met
// while handling a packet (sent with type Request).
type StreamableError struct {
	Type Type
	Text string
}

func (p *StreamableError) PacketID() ID     { return IDStreamableError }
func (p *StreamableError) PacketType() Type { return p.Type }
func (p *StreamableError) decode(d *dec) {
	p.Type = d.typ
	p.Text = d.str("text")
}
func (p *StreamableError) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDStreamableError, p.Type)
	e.str("text", p.Text)
	return e.done()
}

// Authenticate (id 201). Request: Signature (bytes8). Confirm: Result and
// Rooms. Any type other than Confirm uses the request layout.
type Authenticate struct {
	Type      Type
	Signature []byte // request; nil when empty
	Result    int32  // confirm: AuthenticateOK or AuthenticateDenied
	Rooms     []string
}

func (p *Authenticate) PacketID() ID     { return IDAuthenticate }
func (p *Authenticate) PacketType() Type { return p.Type }
func (p *Authenticate) decode(d *dec) {
	p.Type = d.typ
	if p.Type == Confirm {
		p.Result = d.i32("result")
		p.Rooms = d.strs("rooms")
	} else {
		p.Signature = d.bytes8("signature")
	}
}
func (p *Authenticate) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDAuthenticate, p.Type)
	if p.Type == Confirm {
		e.i32(p.Result)
		e.strs("rooms", p.Rooms)
	} else {
		e.bytes8("signature", p.Signature)
	}
	return e.done()
}

// Beep (id 202), same layout for every type.
type Beep struct {
	Type                       Type
	RoomName, FromName, ToName string
}

func (p *Beep) PacketID() ID     { return IDBeep }
func (p *Beep) PacketType() Type { return p.Type }
func (p *Beep) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	p.FromName = d.str("fromName")
	p.ToName = d.str("toName")
}
func (p *Beep) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDBeep, p.Type)
	e.str("roomName", p.RoomName)
	e.str("fromName", p.FromName)
	e.str("toName", p.ToName)
	return e.done()
}

// Chat (id 203), same layout for every type. UserName and Text are trimmed
// by the receiver (not by Decode).
type Chat struct {
	Type     Type
	Question bool  // auditorium question flag
	RoomID   int32 // 0: public room; else a private session id
	RoomName string
	UserName string
	Text     string
}

func (p *Chat) PacketID() ID     { return IDChat }
func (p *Chat) PacketType() Type { return p.Type }
func (p *Chat) decode(d *dec) {
	p.Type = d.typ
	p.Question = d.bool("question")
	p.RoomID = d.i32("roomId")
	p.RoomName = d.str("roomName")
	p.UserName = d.str("userName")
	p.Text = d.str("text")
}
func (p *Chat) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDChat, p.Type)
	e.bool(p.Question)
	e.i32(p.RoomID)
	e.str("roomName", p.RoomName)
	e.str("userName", p.UserName)
	e.str("text", p.Text)
	return e.done()
}

// MaxCreateRoomName is the longest room name (in UTF-16 units) CreateRooms
// accepts.
const MaxCreateRoomName = 127

// CreateRooms (id 204): a u8 count of room names (str[]8), each at most
// MaxCreateRoomName characters (longer: ErrStringTooLong both ways).
type CreateRooms struct {
	Type  Type
	Rooms []string
}

func (p *CreateRooms) PacketID() ID     { return IDCreateRooms }
func (p *CreateRooms) PacketType() Type { return p.Type }
func (p *CreateRooms) decode(d *dec) {
	p.Type = d.typ
	p.Rooms = d.strs8("rooms", MaxCreateRoomName)
}
func (p *CreateRooms) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDCreateRooms, p.Type)
	e.strs8("rooms", p.Rooms, MaxCreateRoomName)
	return e.done()
}

// EnterPrivate (id 205). Every type: RoomName, FromName, ToName.
// Indication and confirm add RoomID, Host and Profile (fromHost/fromProfile
// in the indication, toHost/toProfile in the confirm). Other types use the
// request layout.
type EnterPrivate struct {
	Type                       Type
	RoomName, FromName, ToName string
	RoomID                     int32
	Host, Profile              string
}

func (p *EnterPrivate) PacketID() ID     { return IDEnterPrivate }
func (p *EnterPrivate) PacketType() Type { return p.Type }
func (p *EnterPrivate) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	p.FromName = d.str("fromName")
	p.ToName = d.str("toName")
	switch p.Type {
	case Indication:
		p.RoomID = d.i32("roomId")
		p.Host = d.str("fromHost")
		p.Profile = d.str("fromProfile")
	case Confirm:
		p.RoomID = d.i32("roomId")
		p.Host = d.str("toHost")
		p.Profile = d.str("toProfile")
	}
}
func (p *EnterPrivate) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDEnterPrivate, p.Type)
	e.str("roomName", p.RoomName)
	e.str("fromName", p.FromName)
	e.str("toName", p.ToName)
	switch p.Type {
	case Indication:
		e.i32(p.RoomID)
		e.str("fromHost", p.Host)
		e.str("fromProfile", p.Profile)
	case Confirm:
		e.i32(p.RoomID)
		e.str("toHost", p.Host)
		e.str("toProfile", p.Profile)
	}
	return e.done()
}

// EnterRoom (id 206). Every type: Profile, RoomName, UserName (in this
// order). Indication adds Address, Member, Link; confirm adds Result,
// RoomType, Count and Users. Other types use the request layout. Profile
// and UserName are trimmed by the receiver (not by Decode).
type EnterRoom struct {
	Type     Type
	Profile  string
	RoomName string
	UserName string

	// indication
	Address string
	Member  string // "true" or "false"
	Link    string // "true" or "false"

	// confirm
	Result   int32 // EnterOK, ...
	RoomType int32 // RoomNormal, ...
	Count    int32
	Users    []User // nil when empty
}

func (p *EnterRoom) PacketID() ID     { return IDEnterRoom }
func (p *EnterRoom) PacketType() Type { return p.Type }
func (p *EnterRoom) decode(d *dec) {
	p.Type = d.typ
	p.Profile = d.str("profile")
	p.RoomName = d.str("roomName")
	p.UserName = d.str("userName")
	switch p.Type {
	case Indication:
		p.Address = d.str("address")
		p.Member = d.str("member")
		p.Link = d.str("link")
	case Confirm:
		p.Result = d.i32("result")
		p.RoomType = d.i32("roomType")
		p.Count = d.i32("count")
		p.Users = d.users("users")
	}
}
func (p *EnterRoom) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDEnterRoom, p.Type)
	e.str("profile", p.Profile)
	e.str("roomName", p.RoomName)
	e.str("userName", p.UserName)
	switch p.Type {
	case Indication:
		e.str("address", p.Address)
		e.str("member", p.Member)
		e.str("link", p.Link)
	case Confirm:
		e.i32(p.Result)
		e.i32(p.RoomType)
		e.i32(p.Count)
		e.users("users", p.Users)
	}
	return e.done()
}

// ExitPrivate (id 207), same layout for every type.
type ExitPrivate struct {
	Type     Type
	RoomID   int32
	FromName string
}

func (p *ExitPrivate) PacketID() ID     { return IDExitPrivate }
func (p *ExitPrivate) PacketType() Type { return p.Type }
func (p *ExitPrivate) decode(d *dec) {
	p.Type = d.typ
	p.RoomID = d.i32("roomId")
	p.FromName = d.str("fromName")
}
func (p *ExitPrivate) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDExitPrivate, p.Type)
	e.i32(p.RoomID)
	e.str("fromName", p.FromName)
	return e.done()
}

// ExitRoom (id 208), same layout for every type.
type ExitRoom struct {
	Type               Type
	RoomName, UserName string
}

func (p *ExitRoom) PacketID() ID     { return IDExitRoom }
func (p *ExitRoom) PacketType() Type { return p.Type }
func (p *ExitRoom) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	p.UserName = d.str("userName")
}
func (p *ExitRoom) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDExitRoom, p.Type)
	e.str("roomName", p.RoomName)
	e.str("userName", p.UserName)
	return e.done()
}

// Halt (id 209, admin port). Request: Password. Confirm: Allowed. Other
// types use the request layout.
type Halt struct {
	Type     Type
	Password string
	Allowed  bool
}

func (p *Halt) PacketID() ID     { return IDHalt }
func (p *Halt) PacketType() Type { return p.Type }
func (p *Halt) decode(d *dec) {
	p.Type = d.typ
	if p.Type == Confirm {
		p.Allowed = d.bool("allowed")
	} else {
		p.Password = d.str("password")
	}
}
func (p *Halt) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDHalt, p.Type)
	if p.Type == Confirm {
		e.bool(p.Allowed)
	} else {
		e.str("password", p.Password)
	}
	return e.done()
}

// Kick (id 210), same layout for every type.
type Kick struct {
	Type                                        Type
	RoomName, KickerName, UserName, UserAddress string
	Method                                      int32 // KickRemove, KickKick, KickBan
}

func (p *Kick) PacketID() ID     { return IDKick }
func (p *Kick) PacketType() Type { return p.Type }
func (p *Kick) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	p.KickerName = d.str("kickerName")
	p.UserName = d.str("userName")
	p.UserAddress = d.str("userAddress")
	p.Method = d.i32("method")
}
func (p *Kick) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDKick, p.Type)
	e.str("roomName", p.RoomName)
	e.str("kickerName", p.KickerName)
	e.str("userName", p.UserName)
	e.str("userAddress", p.UserAddress)
	e.i32(p.Method)
	return e.done()
}

// Monitor (id 211, admin port). Request: Password, Interval. Confirm:
// Allowed. Other types use the request layout.
type Monitor struct {
	Type     Type
	Password string
	Interval int32
	Allowed  bool
}

func (p *Monitor) PacketID() ID     { return IDMonitor }
func (p *Monitor) PacketType() Type { return p.Type }
func (p *Monitor) decode(d *dec) {
	p.Type = d.typ
	if p.Type == Confirm {
		p.Allowed = d.bool("allowed")
	} else {
		p.Password = d.str("password")
		p.Interval = d.i32("interval")
	}
}
func (p *Monitor) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDMonitor, p.Type)
	if p.Type == Confirm {
		e.bool(p.Allowed)
	} else {
		e.str("password", p.Password)
		e.i32(p.Interval)
	}
	return e.done()
}

// PasswordAccess (id 212). Request: the 11 Access request strings (in
// Access), then Member, Monitor, Admin, MemberName, MemberPassword,
// Password, Stage, Topic. Confirm: the Access confirm fields (in Access:
// Result, Rooms, Challenge), then Profile. Other types use the request
// layout. Access.Type and Access.Legacy are ignored by AppendPacket and left
// zero by Decode.
type PasswordAccess struct {
	Type Type
	Access

	// request
	Member, Monitor, Admin bool
	MemberName             string
	MemberPassword         string
	Password               string
	Stage                  bool
	Topic                  string

	// confirm
	Profile string
}

func (p *PasswordAccess) PacketID() ID     { return IDPasswordAccess }
func (p *PasswordAccess) PacketType() Type { return p.Type }
func (p *PasswordAccess) decode(d *dec) {
	p.Type = d.typ
	if p.Type == Confirm {
		p.Access.decodeConfirm(d)
		p.Profile = d.str("profile")
		return
	}
	p.Access.decodeRequest(d)
	p.Member = d.bool("member")
	p.Monitor = d.bool("monitor")
	p.Admin = d.bool("admin")
	p.MemberName = d.str("memberName")
	p.MemberPassword = d.str("memberPassword")
	p.Password = d.str("password")
	p.Stage = d.bool("stage")
	p.Topic = d.str("topic")
}
func (p *PasswordAccess) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDPasswordAccess, p.Type)
	if p.Type == Confirm {
		p.Access.encodeConfirm(&e)
		e.str("profile", p.Profile)
		return e.done()
	}
	p.Access.encodeRequest(&e)
	e.bool(p.Member)
	e.bool(p.Monitor)
	e.bool(p.Admin)
	e.str("memberName", p.MemberName)
	e.str("memberPassword", p.MemberPassword)
	e.str("password", p.Password)
	e.bool(p.Stage)
	e.str("topic", p.Topic)
	return e.done()
}

// Ping (id 213): header only. The server sends a request on an idle
// connection; the client answers with a response.
type Ping struct {
	Type Type
}

func (p *Ping) PacketID() ID     { return IDPing }
func (p *Ping) PacketType() Type { return p.Type }
func (p *Ping) decode(d *dec)    { p.Type = d.typ }
func (p *Ping) AppendPacket(b []byte) ([]byte, error) {
	return AppendHeader(b, IDPing, p.Type), nil
}

// Report (id 214, admin port; sent as an indication), same layout for
// every type.
type Report struct {
	Type                                                                      Type
	Time, FreeMemory, TotalMemory                                             int64
	Threads, Connections, UniqueAddresses, Rooms, PersonalRooms, PrivateRooms int32
	Received, Sent                                                            int64
}

func (p *Report) PacketID() ID     { return IDReport }
func (p *Report) PacketType() Type { return p.Type }
func (p *Report) decode(d *dec) {
	p.Type = d.typ
	p.Time = d.i64("time")
	p.FreeMemory = d.i64("freeMemory")
	p.TotalMemory = d.i64("totalMemory")
	p.Threads = d.i32("threads")
	p.Connections = d.i32("connections")
	p.UniqueAddresses = d.i32("uniqueAddresses")
	p.Rooms = d.i32("rooms")
	p.PersonalRooms = d.i32("personalRooms")
	p.PrivateRooms = d.i32("privateRooms")
	p.Received = d.i64("received")
	p.Sent = d.i64("sent")
}
func (p *Report) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDReport, p.Type)
	e.i64(p.Time)
	e.i64(p.FreeMemory)
	e.i64(p.TotalMemory)
	e.i32(p.Threads)
	e.i32(p.Connections)
	e.i32(p.UniqueAddresses)
	e.i32(p.Rooms)
	e.i32(p.PersonalRooms)
	e.i32(p.PrivateRooms)
	e.i64(p.Received)
	e.i64(p.Sent)
	return e.done()
}

// RoomList (id 215), same layout for every type: Filter, Rooms.
type RoomList struct {
	Type   Type
	Filter string
	Rooms  []string // nil when empty
}

func (p *RoomList) PacketID() ID     { return IDRoomList }
func (p *RoomList) PacketType() Type { return p.Type }
func (p *RoomList) decode(d *dec) {
	p.Type = d.typ
	p.Filter = d.str("filter")
	p.Rooms = d.strs("rooms")
}
func (p *RoomList) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDRoomList, p.Type)
	e.str("filter", p.Filter)
	e.strs("rooms", p.Rooms)
	return e.done()
}

// UserList (id 216). Every type: RoomName. Confirm adds Result, RoomType,
// DocumentBase and Users. Other types use the request layout.
type UserList struct {
	Type         Type
	RoomName     string
	Result       int32 // UserListOK or UserListNoSuchRoom
	RoomType     int32
	DocumentBase string
	Users        []User // nil when empty
}

func (p *UserList) PacketID() ID     { return IDUserList }
func (p *UserList) PacketType() Type { return p.Type }
func (p *UserList) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	if p.Type == Confirm {
		p.Result = d.i32("result")
		p.RoomType = d.i32("roomType")
		p.DocumentBase = d.str("documentBase")
		p.Users = d.users("users")
	}
}
func (p *UserList) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDUserList, p.Type)
	e.str("roomName", p.RoomName)
	if p.Type == Confirm {
		e.i32(p.Result)
		e.i32(p.RoomType)
		e.str("documentBase", p.DocumentBase)
		e.users("users", p.Users)
	}
	return e.done()
}

// Whisper (id 217), same layout for every type.
type Whisper struct {
	Type                             Type
	RoomName, FromName, ToName, Text string
}

func (p *Whisper) PacketID() ID     { return IDWhisper }
func (p *Whisper) PacketType() Type { return p.Type }
func (p *Whisper) decode(d *dec) {
	p.Type = d.typ
	p.RoomName = d.str("roomName")
	p.FromName = d.str("fromName")
	p.ToName = d.str("toName")
	p.Text = d.str("text")
}
func (p *Whisper) AppendPacket(b []byte) ([]byte, error) {
	e := newEnc(b, IDWhisper, p.Type)
	e.str("roomName", p.RoomName)
	e.str("fromName", p.FromName)
	e.str("toName", p.ToName)
	e.str("text", p.Text)
	return e.done()
}
