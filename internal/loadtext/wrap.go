package loadtext

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Width is the width of load's default text: a terminal nobody resized.
const Width = 80

// Wrap folds each line written through it that is wider than its width:
// at the last ", ", "; " or space that fits, the rest indented under the
// value of a "Label = value" line (else four columns in), so that no line
// is lost off the right of a terminal. Lines are written whole; Flush
// writes a last one without its newline.
type Wrap struct {
	w     io.Writer
	width int
	buf   []byte
}

// NewWrap folds what is written to w at width columns.
func NewWrap(w io.Writer, width int) *Wrap { return &Wrap{w: w, width: width} }

func (x *Wrap) Write(p []byte) (int, error) {
	x.buf = append(x.buf, p...)
	for {
		i := strings.IndexByte(string(x.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(x.buf[:i])
		x.buf = x.buf[i+1:]
		if _, err := io.WriteString(x.w, Fold(line, x.width)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// Flush writes what is left of an unfinished line.
func (x *Wrap) Flush() error {
	if len(x.buf) == 0 {
		return nil
	}
	line := string(x.buf)
	x.buf = nil
	_, err := io.WriteString(x.w, Fold(line, x.width))
	return err
}

// Fold breaks line into lines of at most width runes (a word longer than
// a line is cut), joined by newlines.
func Fold(line string, width int) string {
	if width < 20 || utf8.RuneCountInString(line) <= width {
		return line
	}
	indent := len(line) - len(strings.TrimLeft(line, " ")) + 4
	if i := strings.Index(line, " = "); i > 0 && i <= 20 && !strings.Contains(line[:i], ":") {
		indent = utf8.RuneCountInString(line[:i]) + 3
	}
	indent = min(indent, width/2)
	pad := strings.Repeat(" ", indent)
	var out []string
	r := []rune(line)
	for len(r) > width {
		cut := breakAt(r, width, indent)
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		r = []rune(pad + strings.TrimLeft(string(r[cut:]), " "))
	}
	out = append(out, string(r))
	return strings.Join(out, "\n")
}

// breakAt is where to end the first line of r within width runes: after
// the last ", " or "; " in its second half, else at the last space past
// the indent, else at width.
func breakAt(r []rune, width, indent int) int {
	space := -1
	for i := width; i > indent; i-- {
		if i < len(r) && r[i] == ' ' {
			if i >= width/2 && (r[i-1] == ',' || r[i-1] == ';') {
				return i
			}
			if space < 0 {
				space = i
			}
		}
	}
	if space > 0 {
		return space
	}
	return width
}
