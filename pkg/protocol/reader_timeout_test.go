package protocol

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timeoutReader returns its chunks in turn; a nil chunk is a passed read
// deadline, as a net.Conn with a deadline returns it.
type timeoutReader struct{ chunks [][]byte }

func (r *timeoutReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	c := r.chunks[0]
	r.chunks = r.chunks[1:]
	if c == nil {
		return 0, os.ErrDeadlineExceeded
	}
	return copy(p, c), nil
}

func TestReaderContinuesAfterTimeout(t *testing.T) {
	b, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: "hello"}).AppendPacket(nil)
	require.NoError(t, err)
	r := NewReader(&timeoutReader{chunks: [][]byte{nil, b[:3], nil, b[3:10], nil, b[10:]}}, 0)
	for range 3 {
		_, err := r.Next()
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	}
	p, err := r.ReadPacket()
	require.NoError(t, err)
	assert.Equal(t, "hello", p.(*Chat).Text)
	_, err = r.Next()
	assert.ErrorIs(t, err, io.EOF)
}
