package protocol

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModifiedUTF8Valid(t *testing.T) {
	tests := []struct {
		name  string
		s     string // Go form
		mutf8 []byte // wire form
		units int    // Java String.length()
	}{
		{"empty", "", []byte{}, 0},
		{"ASCII", "Room1", []byte("Room1"), 5},
		{"NUL", "\x00", []byte{0xC0, 0x80}, 1},
		{"NUL inside", "a\x00b", []byte{'a', 0xC0, 0x80, 'b'}, 3},
		{"U+007F", "\u007f", []byte{0x7F}, 1},
		{"U+0080", "\u0080", []byte{0xC2, 0x80}, 1},
		{"U+00E9", "é", []byte{0xC3, 0xA9}, 1},
		{"U+07FF", "\u07ff", []byte{0xDF, 0xBF}, 1},
		{"U+0800", "\u0800", []byte{0xE0, 0xA0, 0x80}, 1},
		{"U+20AC", "€", []byte{0xE2, 0x82, 0xAC}, 1},
		{"U+D7FF", "\ud7ff", []byte{0xED, 0x9F, 0xBF}, 1},
		{"U+E000", "\ue000", []byte{0xEE, 0x80, 0x80}, 1},
		{"U+FFFD", "\ufffd", []byte{0xEF, 0xBF, 0xBD}, 1},
		{"U+FFFF", "\uffff", []byte{0xEF, 0xBF, 0xBF}, 1},
		{"U+10000", "\U00010000", []byte{0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80}, 2},
		{"U+1F600", "😀", []byte{0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}, 2},
		{"U+10FFFF", "\U0010ffff", []byte{0xED, 0xAF, 0xBF, 0xED, 0xBF, 0xBF}, 2},
		{"lone high surrogate", "\xed\xa0\x80", []byte{0xED, 0xA0, 0x80}, 1},
		{"lone high surrogate then text", "\xed\xa0\x80x", []byte{0xED, 0xA0, 0x80, 'x'}, 2},
		{"lone low surrogate", "\xed\xb0\x80", []byte{0xED, 0xB0, 0x80}, 1},
		{"low then high", "\xed\xb0\x80\xed\xa0\x80", []byte{0xED, 0xB0, 0x80, 0xED, 0xA0, 0x80}, 2},
		{"mixed", "a\x00é€😀", []byte{'a', 0xC0, 0x80, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := EncodeString(tt.s)
			require.NoError(t, err)
			assert.Equal(t, tt.mutf8, enc, "EncodeString")

			dec, err := DecodeString(tt.mutf8)
			require.NoError(t, err)
			assert.Equal(t, tt.s, dec, "DecodeString")

			assert.True(t, ValidString(tt.mutf8))
			assert.Equal(t, tt.units, UTF16Len(tt.mutf8), "UTF16Len")
			assert.Equal(t, tt.units, utf16Units(tt.s), "utf16Units")

			b, err := AppendString([]byte{0xAA}, tt.s)
			require.NoError(t, err)
			assert.Equal(t, append([]byte{0xAA, byte(len(tt.mutf8) >> 8), byte(len(tt.mutf8))}, tt.mutf8...), b, "AppendString")
		})
	}
}

// TestModifiedUTF8Lenient: forms Java's readUTF accepts although no Java
// writer produces them. They decode to their character and re-encode in the
// canonical form.
func TestModifiedUTF8Lenient(t *testing.T) {
	tests := []struct {
		name      string
		mutf8     []byte
		s         string
		canonical []byte
	}{
		{"raw 0x00", []byte{'a', 0x00, 'b'}, "a\x00b", []byte{'a', 0xC0, 0x80, 'b'}},
		{"overlong 2-byte 'A'", []byte{0xC1, 0x81}, "A", []byte{'A'}},
		{"overlong 3-byte NUL", []byte{0xE0, 0x80, 0x80}, "\x00", []byte{0xC0, 0x80}},
		{"overlong 3-byte U+07FF", []byte{0xE0, 0x9F, 0xBF}, "\u07ff", []byte{0xDF, 0xBF}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := DecodeString(tt.mutf8)
			require.NoError(t, err)
			assert.Equal(t, tt.s, s)
			enc, err := EncodeString(s)
			require.NoError(t, err)
			assert.Equal(t, tt.canonical, enc)
		})
	}
}

func TestModifiedUTF8Malformed(t *testing.T) {
	tests := []struct {
		name  string
		mutf8 []byte
	}{
		{"lone continuation byte", []byte{0x80}},
		{"continuation after ASCII", []byte{'a', 0xBF}},
		{"truncated 2-byte", []byte{0xC3}},
		{"truncated 3-byte (1 of 3)", []byte{0xE2}},
		{"truncated 3-byte (2 of 3)", []byte{0xE2, 0x82}},
		{"bad continuation in 2-byte", []byte{0xC3, 0x41}},
		{"bad continuation in 3-byte (2nd)", []byte{0xE2, 0x41, 0xAC}},
		{"bad continuation in 3-byte (3rd)", []byte{0xE2, 0x82, 0xC0}},
		{"4-byte UTF-8 F0", []byte{0xF0, 0x9F, 0x98, 0x80}},
		{"F8", []byte{0xF8, 0x80, 0x80, 0x80, 0x80}},
		{"FF", []byte{0xFF}},
		{"NUL cut short", []byte{0xC0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeString(tt.mutf8)
			assert.ErrorIs(t, err, ErrMalformedString)
			assert.False(t, ValidString(tt.mutf8))

			// As a field of a packet.
			b := AppendHeader(nil, IDStreamableError, Request)
			b = AppendRawString(b, tt.mutf8)
			_, _, err = Decode(b)
			assert.ErrorIs(t, err, ErrMalformedString)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, "text", de.Field)
			assert.Equal(t, 6, de.Offset)
		})
	}
}

func TestEncodeNotEncodable(t *testing.T) {
	for _, s := range []string{"\xff", "a\x80", "\xf0\x9f\x98", "\xed\xa0", "\xc3"} {
		_, err := EncodeString(s)
		assert.ErrorIs(t, err, ErrMalformedString, "%q", s)
		b, err := AppendString([]byte("keep"), s)
		assert.ErrorIs(t, err, ErrMalformedString, "%q", s)
		assert.Equal(t, []byte("keep"), b, "b unchanged on error")
	}
}

func TestStringLengthLimit(t *testing.T) {
	ok := strings.Repeat("a", 65535)
	b, err := AppendString(nil, ok)
	require.NoError(t, err)
	assert.Len(t, b, 65537)
	assert.Equal(t, []byte{0xFF, 0xFF}, b[:2])
	_, err = EncodeString(ok)
	assert.NoError(t, err)

	for name, s := range map[string]string{
		"65536 ASCII":                     strings.Repeat("a", 65536),
		"65534 ASCII + NUL (65536 bytes)": strings.Repeat("a", 65534) + "\x00",
		"21846 x U+20AC (65538 bytes)":    strings.Repeat("€", 21846),
		"16384 x U+1F600 (98304 bytes)":   strings.Repeat("😀", 16384),
		"16383 x U+1F600 (98298 bytes)":   strings.Repeat("😀", 16383),
	} {
		b, err := AppendString([]byte("x"), s)
		assert.ErrorIs(t, err, ErrStringTooLong, name)
		assert.Equal(t, []byte("x"), b, name)
		_, err = EncodeString(s)
		assert.ErrorIs(t, err, ErrStringTooLong, name)
	}

	// 65535 encoded bytes from multi-byte characters: accepted.
	s := strings.Repeat("€", 21845)
	b, err = AppendString(nil, s)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xFF, 0xFF}, b[:2])

	// In a packet: an EncodeError naming the field, b unchanged.
	p := &Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: strings.Repeat("a", 65536)}
	out, err := p.AppendPacket([]byte("prefix"))
	assert.ErrorIs(t, err, ErrStringTooLong)
	assert.Equal(t, []byte("prefix"), out)
	assert.EqualError(t, err, `protocol: encode Chat request: field "text": string too long`)
}

func TestTrim(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"   ", ""},
		{"abc", "abc"},
		{" abc ", "abc"},
		{"\x00\t\n abc\r\x1f\x20", "abc"},
		{"\x00", ""},
		{"a b", "a b"},
		{"\u00a0abc\u00a0", "\u00a0abc\u00a0"}, // NBSP is > U+0020: kept
		{" \x7f ", "\x7f"},
		{" é ", "é"},
		{" 😀 ", "😀"},
		{"123456789 123456789 123456789 123456789 123456789 123456789 ", "123456789 123456789 123456789 123456789 123456789 123456789"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Trim(tt.in), "Trim(%q)", tt.in)
		raw, err := EncodeString(tt.in)
		require.NoError(t, err)
		wantRaw, err := EncodeString(tt.want)
		require.NoError(t, err)
		assert.Equal(t, wantRaw, TrimRaw(raw), "TrimRaw(%q)", tt.in)
	}

	// Lenient forms Java would decode as characters <= U+0020.
	assert.Equal(t, []byte("a"), TrimRaw([]byte{0x00, 0xC0, 0xA0, 'a', 0xE0, 0x80, 0xA0, 0xC0, 0x80}))
	assert.Equal(t, []byte{}, TrimRaw([]byte{0xC0, 0x80, ' '}))
	// Malformed bytes stop the trim instead of panicking.
	assert.Equal(t, []byte{0x80, 'a'}, TrimRaw([]byte{' ', 0x80, 'a', ' '}))
	assert.Equal(t, []byte{'a', 0xC0}, TrimRaw([]byte{'a', 0xC0}))
	assert.Equal(t, []byte{0x80, 0x80, 0x80, 0x80}, TrimRaw([]byte{0x80, 0x80, 0x80, 0x80}))

	raw := []byte("  Mark1  ")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = TrimRaw(raw) }))
}
