package protocol

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Decoding errors come wrapped in a *DecodeError, encoding
// errors from AppendPacket in an *EncodeError; test them with errors.Is.
var (
	// ErrIncomplete: the input ends inside a packet. Decode returns it when
	// more bytes are needed; from DecodeMessage it means a truncated message.
	ErrIncomplete = errors.New("incomplete packet")
	// ErrUnknownID: the packet id is not in the id table. The stream cannot
	// be followed past it (there is no length prefix).
	ErrUnknownID = errors.New("unknown packet id")
	// ErrMalformedString: a str is not valid modified UTF-8 or, when
	// encoding, a Go string holds bytes that cannot be encoded.
	ErrMalformedString = errors.New("malformed modified UTF-8")
	// ErrTooLarge: a packet would exceed the Reader's maxPacket.
	ErrTooLarge = errors.New("packet too large")
	// ErrStringTooLong: a string needs more than 65535 encoded bytes, a
	// bytes8 field more than 255 bytes, or a CreateRooms name more than 127
	// characters.
	ErrStringTooLong = errors.New("string too long")
	// ErrBadCount: a negative element count, or more elements than a u8
	// count can express when encoding.
	ErrBadCount = errors.New("bad count")
	// ErrTrailingData: DecodeMessage found bytes after the packet.
	ErrTrailingData = errors.New("trailing data after the packet")
	// ErrLegacyAccess: AppendPacket of an Access with Legacy set; the
	// legacy form (id 17) is decoded only.
	ErrLegacyAccess = errors.New("legacy Access (id 17) cannot be encoded")
)

// header completeness of a DecodeError.
const (
	hdrFull   = 0 // id and type known
	hdrIDOnly = 1 // id known, type not read
	hdrNone   = 2 // nothing known
)

// DecodeError is a decoding failure: the packet (when its header was read),
// the field and its byte offset from the start of the packet.
type DecodeError struct {
	ID     ID
	Type   Type
	Field  string // field name as in the protocol sheet, e.g. "text", "users[2].profile"; "" if none
	Offset int    // byte offset of the field (or of the failure) from the start of the packet
	Err    error  // one of the sentinels above, or io.ErrUnexpectedEOF

	hdr uint8 // hdrFull, hdrIDOnly or hdrNone
}

// Error formats the error as, e.g.,
// `protocol: Chat indication: field "text" at byte 21: malformed modified UTF-8`.
func (e *DecodeError) Error() string {
	var sb strings.Builder
	sb.WriteString("protocol: ")
	switch e.hdr {
	case hdrFull:
		sb.WriteString(e.ID.String())
		sb.WriteByte(' ')
		sb.WriteString(e.Type.String())
	case hdrIDOnly:
		sb.WriteString(e.ID.String())
	default:
		sb.WriteString("packet header")
	}
	if e.Field != "" {
		sb.WriteString(": field ")
		sb.WriteString(strconv.Quote(e.Field))
		sb.WriteString(" at byte ")
	} else {
		sb.WriteString(" at byte ")
	}
	sb.WriteString(strconv.Itoa(e.Offset))
	sb.WriteString(": ")
	if e.Err != nil {
		sb.WriteString(e.Err.Error())
	} else {
		sb.WriteString("error")
	}
	return sb.String()
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError is an AppendPacket failure: which packet and field.
type EncodeError struct {
	ID    ID
	Type  Type
	Field string
	Err   error
}

// Error formats the error as, e.g.,
// `protocol: encode Chat request: field "text": string too long`.
func (e *EncodeError) Error() string {
	s := "protocol: encode " + e.ID.String() + " " + e.Type.String()
	if e.Field != "" {
		s += ": field " + strconv.Quote(e.Field)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *EncodeError) Unwrap() error { return e.Err }
