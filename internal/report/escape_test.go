package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

func TestTermWriter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, é 中 ✓\nnext line\n", "plain text, é 中 ✓\nnext line\n"},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`},
		{"over\rwrite\ttab\x7f", `over\x0dwrite\x09tab\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bidi \u202egnp.exe\u2066x\u2069", `bidi \u202egnp.exe\u2066x\u2069`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		var b bytes.Buffer
		n, err := termWriter{&b}.Write([]byte(tc.in))
		require.NoError(t, err)
		assert.Equal(t, len(tc.in), n, "the caller's bytes, all written")
		assert.Equal(t, tc.want, b.String(), "%q", tc.in)
	}
}

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://x","click")`: `'=HYPERLINK("http://x","click")`,
		"+1+2":                           "'+1+2",
		"-1+cmd|' /C calc'!A0":           "'-1+cmd|' /C calc'!A0",
		"@SUM(A1:A9)":                    "'@SUM(A1:A9)",
		"\t=1":                           "'\t=1",
		"\r=1":                           "'\r=1",
		"-3.2":                           "-3.2",
		"+7":                             "+7",
		"----":                           "----",
		"----ad":                         "----ad",
		"----=1":                         "'----=1",
		"go1.26 on Linux":                "go1.26 on Linux",
		"":                               "",
		"volanogo serve = fast":          "volanogo serve = fast",
	} {
		assert.Equal(t, want, csvCell(in), "%q", in)
	}
}

// TestHostileDocumentText: a document's label and failure carry terminal
// escape sequences and spreadsheet formulas. The text and markdown reports
// show them escaped (no ESC reaches the terminal), the CSV report keeps no
// cell a spreadsheet would evaluate, and the report's own "----" marks
// stay as they are.
func TestHostileDocumentText(t *testing.T) {
	label := "\x1b]0;owned\x07\x1b[2J=HYPERLINK(\"http://x\",\"y\")"
	docs := []*results.Document{
		doc(label, 1000, 1, 1800, ""),
		doc(label, 1000, 2, 1900, ""),
		doc(label, 1000, 3, 0, results.FailStall),
		doc(label, 1000, 4, 1850, ""),
		doc("=cmd|' /C calc'!A0", 1000, 1, 1800, ""),
		doc("=cmd|' /C calc'!A0", 1000, 2, 1800, ""),
	}
	docs[2].Failures[0].Example = "Room1 stalled \x1b[31mred\x1b[0m \u009b2J"
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)

	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		require.NoError(t, r.Render(&b, format))
		out := b.String()
		assert.NotContains(t, out, "\x1b", format)
		assert.NotContains(t, out, "\u009b", format)
		assert.NotContains(t, out, "\a", format)
		assert.Contains(t, out, `\x1b]0;owned\x07\x1b[2J`, format)
	}

	var b bytes.Buffer
	require.NoError(t, r.Render(&b, "csv"))
	rows, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(rows), 1)
	failed := false
	for _, row := range rows {
		for _, cell := range row {
			if cell == "" {
				continue
			}
			if strings.HasPrefix(cell, "----") {
				failed = true
				continue
			}
			assert.NotContains(t, "=+@\t\r", cell[:1], "%q", row)
			if cell[0] == '-' {
				assert.Regexp(t, `^-[0-9.]+$`, cell, "%q", row)
			}
		}
	}
	assert.True(t, failed, "the failed run's mark is in the CSV")
	assert.Contains(t, rows[1:], []string{"fast", "'=cmd|' /C calc'!A0", "1000", "score", "1800"})
}
