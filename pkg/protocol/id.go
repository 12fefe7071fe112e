package protocol

import "strconv"

// ID is a packet id, the first two bytes of every packet (unsigned 16-bit
// big-endian).
type ID uint16

// Packet ids (sheet §3). A VolanoMark run uses only IDAccess, IDEnterRoom,
// IDChat, IDExitRoom and IDRoomList.
const (
	IDAccess          ID = 1   // Access (current form)
	IDAccessLegacy    ID = 17  // Access, legacy 2.1 form: decode only
	IDPacket          ID = 101 // bare base packet, header only
	IDStreamableError ID = 102 // error text sent by the server
	IDAuthenticate    ID = 201
	IDBeep            ID = 202
	IDChat            ID = 203
	IDCreateRooms     ID = 204
	IDEnterPrivate    ID = 205
	IDEnterRoom       ID = 206
	IDExitPrivate     ID = 207
	IDExitRoom        ID = 208
	IDHalt            ID = 209
	IDKick            ID = 210
	IDMonitor         ID = 211
	IDPasswordAccess  ID = 212
	IDPing            ID = 213
	IDReport          ID = 214
	IDRoomList        ID = 215
	IDUserList        ID = 216
	IDWhisper         ID = 217
)

var idNames = [...]string{
	IDAccess:          "Access",
	IDAccessLegacy:    "AccessLegacy",
	IDPacket:          "Packet",
	IDStreamableError: "StreamableError",
	IDAuthenticate:    "Authenticate",
	IDBeep:            "Beep",
	IDChat:            "Chat",
	IDCreateRooms:     "CreateRooms",
	IDEnterPrivate:    "EnterPrivate",
	IDEnterRoom:       "EnterRoom",
	IDExitPrivate:     "ExitPrivate",
	IDExitRoom:        "ExitRoom",
	IDHalt:            "Halt",
	IDKick:            "Kick",
	IDMonitor:         "Monitor",
	IDPasswordAccess:  "PasswordAccess",
	IDPing:            "Ping",
	IDReport:          "Report",
	IDRoomList:        "RoomList",
	IDUserList:        "UserList",
	IDWhisper:         "Whisper",
}

// Known reports whether id is one of the ids in the table above, i.e.
// whether this package knows its layout.
func (id ID) Known() bool {
	return int(id) < len(idNames) && idNames[id] != ""
}

// String returns the packet class name ("Chat", "EnterRoom", ...), or
// "id(999)" for an unknown id.
func (id ID) String() string {
	if id.Known() {
		return idNames[id]
	}
	return "id(" + strconv.Itoa(int(id)) + ")"
}

// Type is the packet type, the signed 32-bit field after the id. The wire
// does not restrict it; see the package doc for how other values are laid out.
type Type int32

// Packet types.
const (
	Request    Type = 1 // client -> server
	Indication Type = 2 // server -> a client, caused by someone else
	Response   Type = 3 // client -> server, answer to a server request (Ping)
	Confirm    Type = 4 // server -> the client that sent the request
)

// String returns "request", "indication", "response", "confirm", or
// "type(7)" for other values.
func (t Type) String() string {
	switch t {
	case Request:
		return "request"
	case Indication:
		return "indication"
	case Response:
		return "response"
	case Confirm:
		return "confirm"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// DefaultMaxPacket is the packet size limit a Reader uses when given 0.
const DefaultMaxPacket = 64 << 10

// Access and PasswordAccess confirm results.
const (
	AccessOK             int32 = 1
	AccessHostDenied     int32 = 2
	AccessDocumentDenied int32 = 3
	AccessVersionDenied  int32 = 4
	AccessBadPassword    int32 = 5
	AccessBadJavaVersion int32 = 6
	AccessHostDuplicate  int32 = 7
)

// EnterRoom confirm results.
const (
	EnterOK          int32 = 1
	EnterRoomFull    int32 = 2
	EnterNameTaken   int32 = 3
	EnterMemberTaken int32 = 4
	EnterNoSuchRoom  int32 = 5
)

// Room types in EnterRoom and UserList confirms.
const (
	RoomUnknown int32 = 0
	RoomNormal  int32 = 1
	RoomEvent   int32 = 2 // auditorium
)

// UserList confirm results.
const (
	UserListOK         int32 = 1
	UserListNoSuchRoom int32 = 2
)

// Authenticate confirm results.
const (
	AuthenticateOK     int32 = 1
	AuthenticateDenied int32 = 2
)

// Kick methods.
const (
	KickRemove int32 = 1 // remove from the room
	KickKick   int32 = 2 // disconnect
	KickBan    int32 = 3 // disconnect and ban the address
)
