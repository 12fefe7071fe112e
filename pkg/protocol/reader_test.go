package protocol

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkReader returns the data in pieces of 1..max bytes, chosen by rng.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.IntN(c.max)
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readFrames reads every frame of r, copying Raw, until an error.
func readFrames(r *Reader) ([][]byte, error) {
	var out [][]byte
	for {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		if !bytes.Equal(f.Raw[len(f.Raw)-len(f.Body):], f.Body) {
			return out, errors.New("Body is not the tail of Raw")
		}
		out = append(out, bytes.Clone(f.Raw))
	}
}

func TestReaderCapturesRandomChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range allCaptures(t) {
		var want [][]byte
		for _, p := range splitCapture(t, s) {
			want = append(want, p.Raw)
		}
		for _, maxChunk := range []int{1, 2, 7, 64, 1000} {
			for rep := 0; rep < 5; rep++ {
				r := NewReader(&chunkReader{data: s.Data, rng: rng, max: maxChunk}, 0)
				got, err := readFrames(r)
				require.ErrorIs(t, err, io.EOF, "%s chunks<=%d", s.Name, maxChunk)
				require.Equal(t, want, got, "%s chunks<=%d", s.Name, maxChunk)
			}
		}
		// The chunks as the proxy received them.
		var chunks [][]byte
		for _, c := range s.Chunks {
			chunks = append(chunks, c.Data)
		}
		r := NewReader(&sliceReader{chunks: chunks}, 0)
		got, err := readFrames(r)
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, want, got, "%s as captured", s.Name)
	}
}

// sliceReader returns one chunk per Read.
type sliceReader struct{ chunks [][]byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.chunks[0])
	s.chunks[0] = s.chunks[0][n:]
	if len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	return n, nil
}

func TestReaderEOF(t *testing.T) {
	chat, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: "hi"}).AppendPacket(nil)
	require.NoError(t, err)

	r := NewReader(bytes.NewReader(nil), 0)
	_, err = r.Next()
	assert.Equal(t, io.EOF, err, "empty stream")

	r = NewReader(bytes.NewReader(chat), 0)
	f, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, IDChat, f.ID)
	assert.Equal(t, Request, f.Type)
	_, err = r.Next()
	assert.Equal(t, io.EOF, err, "clean end")
	_, err = r.Next()
	assert.Equal(t, io.EOF, err, "sticky")

	for cut := 1; cut < len(chat); cut++ {
		r = NewReader(iotest.DataErrReader(bytes.NewReader(chat[:cut])), 0)
		_, err = r.Next()
		assert.Equal(t, io.ErrUnexpectedEOF, err, "cut at %d", cut)
	}

	r = NewReader(iotest.DataErrReader(bytes.NewReader(append(chat, chat...))), 0)
	got, err := readFrames(r)
	assert.Equal(t, io.EOF, err)
	assert.Len(t, got, 2, "data returned with EOF is used")

	boom := errors.New("boom")
	r = NewReader(io.MultiReader(bytes.NewReader(chat[:10]), iotest.ErrReader(boom)), 0)
	_, err = r.Next()
	assert.Equal(t, boom, err)
}

// TestReaderReset: a reset reader forgets its stream (bytes, sticky
// error) and reads the new one with the buffer it had, allocating
// nothing.
func TestReaderReset(t *testing.T) {
	b, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: "hello"}).AppendPacket(nil)
	require.NoError(t, err)
	r := NewReader(&sliceReader{chunks: [][]byte{b, b[:5]}}, 0)
	_, err = r.Next()
	require.NoError(t, err)
	_, err = r.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	src := &sliceReader{}
	chunks := make([][]byte, 1)
	ok := true
	allocs := testing.AllocsPerRun(100, func() {
		chunks[0] = b
		src.chunks = chunks
		r.Reset(src)
		f, err := r.Next()
		_, end := r.Next()
		ok = ok && err == nil && bytes.Equal(b, f.Raw) && end == io.EOF
	})
	assert.True(t, ok, "a reset reader reads its new stream")
	if testing.CoverMode() == "" {
		assert.Zero(t, allocs)
	}
	src.chunks = [][]byte{b[:7], b[7:]}
	r.Reset(src)
	p, err := r.ReadPacket()
	require.NoError(t, err)
	assert.Equal(t, "hello", p.(*Chat).Text)
}
