package protocol

import "encoding/binary"

// AppendHeader appends the packet header: the id (u16) and the type (i32).
func AppendHeader(b []byte, id ID, t Type) []byte {
	return append(b, byte(id>>8), byte(id), byte(t>>24), byte(t>>16), byte(t>>8), byte(t))
}

// AppendInt32 appends v as 4 bytes, big-endian.
func AppendInt32(b []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

// AppendInt64 appends v as 8 bytes, big-endian.
func AppendInt64(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendString appends s as a str: a u16 byte count and the modified UTF-8
// encoding of s. On error (ErrStringTooLong if the encoding exceeds 65535
// bytes, ErrMalformedString if s holds bytes that are neither UTF-8 nor a
// 3-byte surrogate form) it returns b unchanged. Strings of bytes 0x01..0x7F
// take a fast path; nothing is allocated unless b must grow.
func AppendString(b []byte, s string) ([]byte, error) {
	if len(s) > maxStr {
		// Modified UTF-8 is never shorter than the Go form.
		return b, ErrStringTooLong
	}
	if isASCII(s) {
		b = append(b, byte(len(s)>>8), byte(len(s)))
		return append(b, s...), nil
	}
	start := len(b)
	b = append(b, 0, 0)
	b, err := appendEncoded(b, s)
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start - 2
	if n > maxStr {
		return b[:start], ErrStringTooLong
	}
	b[start] = byte(n >> 8)
	b[start+1] = byte(n)
	return b, nil
}

// AppendRawString appends a str whose bytes are already modified UTF-8 (for
// instance a field of a ChatView): the u16 length, then mutf8 as is. The
// caller guarantees len(mutf8) <= 65535 and that mutf8 is valid.
func AppendRawString(b []byte, mutf8 []byte) []byte {
	b = append(b, byte(len(mutf8)>>8), byte(len(mutf8)))
	return append(b, mutf8...)
}
