package protocol

import (
	"bytes"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refEncode is a plain, character-by-character modified UTF-8 encoder to
// check the fast one against.
func refEncode(s string) ([]byte, bool) {
	var out []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
				out = append(out, s[i:i+3]...)
				i += 3
				continue
			}
			return nil, false
		case r == 0:
			out = append(out, 0xC0, 0x80)
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			for _, u := range []rune{hi, lo} {
				out = append(out, 0xE0|byte(u>>12), 0x80|byte(u>>6)&0x3F, 0x80|byte(u)&0x3F)
			}
		default:
			out = utf8.AppendRune(out, r)
		}
		i += size
	}
	return out, true
}

// FuzzString: the encoder agrees with refEncode; what it encodes decodes to
// a string that encodes to the same bytes; the decoder accepts what
// scanMUTF8 accepts, and TrimRaw agrees with Trim.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "Room1", "a\x00b", "é€😀", "\xed\xa0\x80x", "\xed\xb0\x80", "\xff", "\xc0\x80", " \x00 x \t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := appendEncoded(nil, s)
		want, ok := refEncode(s)
		if (err == nil) != ok {
			t.Fatalf("%q: error %v, reference ok=%v", s, err, ok)
		}
		if err == nil {
			if !bytes.Equal(got, want) {
				t.Fatalf("%q: % x, reference % x", s, got, want)
			}
			back, err := DecodeString(got)
			if err != nil {
				t.Fatalf("%q: decode % x: %v", s, got, err)
			}
			again, err := appendEncoded(nil, back)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("%q: re-encoded % x, want % x (%v)", s, again, got, err)
			}
			if tr, _ := appendEncoded(nil, Trim(back)); !bytes.Equal(TrimRaw(got), tr) {
				t.Fatalf("%q: TrimRaw % x, Trim % x", s, TrimRaw(got), tr)
			}
			if UTF16Len(got) != utf16Units(back) {
				t.Fatalf("%q: UTF16Len %d, utf16Units %d", s, UTF16Len(got), utf16Units(back))
			}
		}
		// The same bytes read as modified UTF-8.
		raw := []byte(s)
		dec, err := DecodeString(raw)
		if ValidString(raw) != (err == nil) {
			t.Fatalf("% x: ValidString and DecodeString disagree", raw)
		}
		if err == nil {
			if _, err := appendEncoded(nil, dec); err != nil {
				t.Fatalf("% x: decoded %q does not encode: %v", raw, dec, err)
			}
		}
		_ = TrimRaw(raw)
	})
}
