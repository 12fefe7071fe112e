package protocol

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// maxStr is the largest encoded string the u16 length prefix can express.
const maxStr = 65535

// scanMUTF8 checks b against the acceptance rules of Java's
// DataInputStream.readUTF: a byte 0xxxxxxx is one char (a raw 0x00 included),
// 110xxxxx 10xxxxxx is one char, 1110xxxx 10xxxxxx 10xxxxxx is one char, and
// anything else (a stray continuation byte, a 4-byte lead 11110xxx or above,
// a bad continuation byte, a sequence cut short by the end) is malformed.
// Overlong 2- and 3-byte forms are accepted, as Java accepts them.
//
// same reports whether b is also, byte for byte, the UTF-8 Go uses for the
// same text: no C0 80 (NUL), no other overlong form and no surrogate. Only
// then may b be used as a Go string without conversion.
func scanMUTF8(b []byte) (ok, same bool) {
	same = true
	i := 0
	for i < len(b) {
		// Eight ASCII bytes at a time.
		if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&hiBits == 0 {
			i += 8
			continue
		}
		c := b[i]
		if c < 0x80 {
			i++
			continue
		}
		switch c >> 4 {
		case 0xC, 0xD:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return false, false
			}
			if c < 0xC2 {
				same = false
			}
			i += 2
		case 0xE:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return false, false
			}
			if (c == 0xE0 && b[i+1] < 0xA0) || (c == 0xED && b[i+1] >= 0xA0) {
				same = false
			}
			i += 3
		default:
			return false, false
		}
	}
	return true, same
}

// ValidString reports whether mutf8 is acceptable modified UTF-8 (the rules
// of Java's DataInputStream.readUTF; see the package doc).
func ValidString(mutf8 []byte) bool {
	ok, _ := scanMUTF8(mutf8)
	return ok
}

// appendDecoded appends the Go form of the valid modified UTF-8 b to dst.
// Surrogate pairs become one 4-byte UTF-8 character; a lone surrogate is kept
// as its 3-byte form (ED A0..BF xx), so that it is re-encoded unchanged.
func appendDecoded(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			dst = append(dst, c)
			i++
		case c < 0xE0:
			v := rune(c&0x1F)<<6 | rune(b[i+1]&0x3F)
			dst = utf8.AppendRune(dst, v)
			i += 2
		default:
			v := rune(c&0x0F)<<12 | rune(b[i+1]&0x3F)<<6 | rune(b[i+2]&0x3F)
			if utf16.IsSurrogate(v) {
				if v < 0xDC00 && i+5 < len(b) && b[i+3] == 0xED && b[i+4] >= 0xB0 && b[i+4] <= 0xBF {
					lo := 0xD000 | rune(b[i+4]&0x3F)<<6 | rune(b[i+5]&0x3F)
					dst = utf8.AppendRune(dst, utf16.DecodeRune(v, lo))
					i += 6
					continue
				}
				dst = append(dst, b[i:i+3]...)
			} else {
				dst = utf8.AppendRune(dst, v)
			}
			i += 3
		}
	}
	return dst
}

// DecodeString converts modified UTF-8 (without the length prefix) to a Go
// string. It returns ErrMalformedString if mutf8 breaks the rules of Java's
// readUTF. NUL (C0 80) becomes "\x00", a surrogate pair becomes one 4-byte
// UTF-8 character, and a lone surrogate is kept in the string as its 3-byte
// form, which EncodeString re-emits unchanged. Overlong forms and raw 0x00
// bytes, which Java accepts, decode to their character (and so re-encode in
// the canonical form). (Conversely, a Go string holding the 3-byte forms of
// a high and a low surrogate one after the other encodes as a pair, which
// decodes as one 4-byte character.)
func DecodeString(mutf8 []byte) (string, error) {
	ok, same := scanMUTF8(mutf8)
	if !ok {
		return "", ErrMalformedString
	}
	if same {
		return string(mutf8), nil
	}
	return string(appendDecoded(make([]byte, 0, len(mutf8)), mutf8)), nil
}

// isASCII reports whether s holds only bytes 0x01..0x7F, which modified
// UTF-8 writes as they are.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// No byte >= 0x80 and no zero byte.
		if w&hiBits != 0 || (w-loBits)&^w&hiBits != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}

// appendEncoded appends the modified UTF-8 form of s to dst. Runs of bytes
// that are the same in both forms (everything but NUL and 4-byte
// characters) are copied at once. A Go string holding bytes that are neither
// UTF-8 nor a 3-byte surrogate form is not encodable (ErrMalformedString).
func appendEncoded(dst []byte, s string) ([]byte, error) {
	run := 0 // start of the pending run of bytes copied as they are
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c >= 0x01 && c < 0x80:
			i++
			continue
		case c >= 0xC2 && c <= 0xDF:
			if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
		case c >= 0xE0 && c <= 0xEF:
			// E0 needs A0..BF after it (no overlong form); ED A0..BF is
			// a surrogate kept in its 3-byte form (see DecodeString) and
			// is copied like the rest.
			if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && (c != 0xE0 || s[i+1] >= 0xA0) {
				i += 3
				continue
			}
		}
		dst = append(dst, s[run:i]...)
		switch r, size := utf8.DecodeRuneInString(s[i:]); {
		case c == 0:
			dst = append(dst, 0xC0, 0x80)
			i++
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			dst = append(dst,
				0xE0|byte(hi>>12), 0x80|byte(hi>>6)&0x3F, 0x80|byte(hi)&0x3F,
				0xE0|byte(lo>>12), 0x80|byte(lo>>6)&0x3F, 0x80|byte(lo)&0x3F)
			i += size
		default:
			return dst, ErrMalformedString
		}
		run = i
	}
	return append(dst, s[run:]...), nil
}

// EncodeString converts a Go string to modified UTF-8 (without the length
// prefix). It returns ErrMalformedString if s holds bytes that are neither
// UTF-8 nor the 3-byte form of a surrogate, and ErrStringTooLong if the
// encoding exceeds 65535 bytes (so that the result can always be passed to
// AppendRawString).
func EncodeString(s string) ([]byte, error) {
	if len(s) > maxStr {
		return nil, ErrStringTooLong
	}
	if isASCII(s) {
		return []byte(s), nil
	}
	b, err := appendEncoded(make([]byte, 0, len(s)+8), s)
	if err != nil {
		return nil, err
	}
	if len(b) > maxStr {
		return nil, ErrStringTooLong
	}
	return b, nil
}

// UTF16Len returns Java's String.length() of valid modified UTF-8: the number
// of UTF-16 code units, which is the number of bytes that are not
// continuation bytes (10xxxxxx).
func UTF16Len(mutf8 []byte) int {
	n := 0
	for _, c := range mutf8 {
		if c&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// Trim is Java's String.trim on a Go string: it removes every character
// <= U+0020 (NUL and the other control characters included) from both ends.
func Trim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// TrimRaw is Java's String.trim on modified UTF-8: it removes every
// character <= U+0020 from both ends and returns a subslice of mutf8. It
// understands NUL as C0 80 (and the overlong forms Java accepts). It does not
// allocate; on malformed input it stops at the first byte it cannot read.
func TrimRaw(mutf8 []byte) []byte {
	b := mutf8
	for len(b) > 0 {
		n, v := firstChar(b)
		if n == 0 || v > ' ' {
			break
		}
		b = b[n:]
	}
	for len(b) > 0 {
		n, v := lastChar(b)
		if n == 0 || v > ' ' {
			break
		}
		b = b[:len(b)-n]
	}
	return b
}

// firstChar decodes the first character of b; n = 0 if it is malformed.
func firstChar(b []byte) (n int, v rune) {
	c := b[0]
	switch {
	case c < 0x80:
		return 1, rune(c)
	case c&0xE0 == 0xC0:
		if len(b) >= 2 && b[1]&0xC0 == 0x80 {
			return 2, rune(c&0x1F)<<6 | rune(b[1]&0x3F)
		}
	case c&0xF0 == 0xE0:
		if len(b) >= 3 && b[1]&0xC0 == 0x80 && b[2]&0xC0 == 0x80 {
			return 3, rune(c&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F)
		}
	}
	return 0, 0
}

// lastChar decodes the last character of b; n = 0 if it is malformed.
func lastChar(b []byte) (n int, v rune) {
	i := len(b) - 1
	for i >= 0 && len(b)-i <= 3 && b[i]&0xC0 == 0x80 {
		i--
	}
	if i < 0 {
		return 0, 0
	}
	n, v = firstChar(b[i:])
	if n != len(b)-i {
		return 0, 0
	}
	return n, v
}
