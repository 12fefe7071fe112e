package protocol

import "math"

// headerLen is the length of a packet header (id and type), except for the
// legacy Access.
const headerLen = 6

// ChatView is a Chat body read without allocating: the strings are the raw
// modified-UTF-8 bytes from the packet (validated, not trimmed), pointing
// into the buffer ParseChat was given.
type ChatView struct {
	Question bool
	RoomID   int32
	RoomName []byte
	UserName []byte
	Text     []byte
}

// ParseChat reads the body of a Chat packet (Frame.Body of an IDChat frame)
// without allocating. The strings are checked to be valid modified UTF-8;
// bytes after the body are an error. Error offsets count from the start of
// the packet (header included).
func ParseChat(body []byte) (ChatView, error) {
	d := dec{b: body, bias: headerLen, limit: math.MaxInt, id: IDChat, hdr: hdrIDOnly}
	var v ChatView
	v.Question = d.bool("question")
	v.RoomID = d.i32("roomId")
	v.RoomName = d.raw("roomName")
	v.UserName = d.raw("userName")
	v.Text = d.raw("text")
	if d.code == nil && d.off != len(body) {
		d.fail("", d.off, ErrTrailingData)
	}
	if d.code != nil {
		return ChatView{}, d.error()
	}
	return v, nil
}

// AppendChatView appends a Chat packet of type t with the fields of v (for
// instance a request's view with UserName replaced and Text trimmed, relayed
// as an indication) without allocating unless b must grow. The strings of v
// must be valid modified UTF-8 of at most 65535 bytes, as ParseChat returns
// them.
func AppendChatView(b []byte, t Type, v ChatView) []byte {
	b = AppendHeader(b, IDChat, t)
	b = AppendBool(b, v.Question)
	b = AppendInt32(b, v.RoomID)
	b = AppendRawString(b, v.RoomName)
	b = AppendRawString(b, v.UserName)
	return AppendRawString(b, v.Text)
}
