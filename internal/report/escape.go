package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text from result documents (labels, hostnames, command lines, failure
// examples a server's peer may have written) reaches a terminal in the
// text and markdown reports and a spreadsheet in the CSV one: neither may
// be told what to do by it.

// termWriter passes text to a terminal with the characters that would
// command it written escaped: the C0 controls but newline (ESC begins
// every escape sequence; CR overwrites a line), DEL, the C1 controls
// (U+009B is a CSI of its own), the bidirectional overrides and isolates
// (they reorder what is shown), and bytes that are not UTF-8; as \x1b,
// \u202e. The renderers write whole strings, so no character is split
// between two writes.
type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) {
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 || commandsTerminal(r) {
			break
		}
		i += size
	}
	if i == len(p) {
		return t.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	out = append(out, p[:i]...)
	for i < len(p) {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case commandsTerminal(r) && r < 0x80:
			out = fmt.Appendf(out, `\x%02x`, r)
		case commandsTerminal(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// commandsTerminal reports whether a terminal would act on r rather than
// show it (see termWriter).
func commandsTerminal(r rune) bool {
	return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// csvCell keeps a spreadsheet from reading a cell as a formula (OWASP's
// advice on CSV injection): a cell that begins with =, +, -, @, a tab or
// a carriage return is prefixed with a single quote, unless it is a
// number ("-3.2") or the report's own mark of a failed run ("----", then
// footnote letters).
func csvCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	if rest, ok := strings.CutPrefix(s, "----"); ok && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz") == "" {
		return s
	}
	return "'" + s
}
