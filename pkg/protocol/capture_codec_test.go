package protocol

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCaptures decodes every packet of both captures, compares the sequence
// with the -decoded.txt files and re-encodes each packet to the captured
// bytes.
func TestCaptures(t *testing.T) {
	for _, s := range allCaptures(t) {
		t.Run(s.Name, func(t *testing.T) {
			require.True(t, s.EOF, "capture ends with an EOF line")
			pkts := splitCapture(t, s)

			conn, dir, ok := strings.Cut(filepath.Base(s.Name), "-")
			require.True(t, ok)
			want := readDecoded(t, filepath.Join(captureDir, filepath.Dir(s.Name), conn+"-decoded.txt"))
			arrow := map[string]string{"c2s": "C->S", "s2c": "S->C"}[dir]
			require.Len(t, pkts, len(want[arrow]), "packets in the stream")

			for i, p := range pkts {
				w := want[arrow][i]
				assert.Equal(t, w.Offset, p.Offset, "packet %d offset", i)
				assert.Equal(t, w.ID, int(p.Packet.PacketID()), "packet %d id", i)
				assert.Equal(t, w.Name, p.Packet.PacketID().String(), "packet %d name", i)
				assert.Equal(t, w.Type, p.Packet.PacketType().String(), "packet %d type", i)
				assert.Equal(t, w.Len, len(p.Raw), "packet %d length", i)
				assert.Equal(t, w.Fields, pyRepr(p.Packet), "packet %d fields", i)

				enc, err := p.Packet.AppendPacket(nil)
				require.NoError(t, err)
				assert.Equal(t, p.Raw, enc, "packet %d re-encodes to the captured bytes", i)

				again, err := DecodeMessage(enc)
				require.NoError(t, err)
				assert.Equal(t, p.Packet, again)
			}
		})
	}
}
