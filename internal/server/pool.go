package server

import (
	"io"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// bufPool keeps the readers and scratch buffers that idle connections
// give back, for the next connection that reads; it belongs to one event
// loop (no lock). In a turn-taking run most users are silent for a scan
// or more between two of their chats: without it, each of their chats
// made a reader, its buffer and a scratch buffer anew.
type bufPool struct {
	readers   []*protocol.Reader
	scratches [][]byte
}

// poolMax bounds each list: what thousands of idle connections give back
// beyond it is left to the GC.
const poolMax = 1024

// reader is a reader of src: a kept one, or a new one.
func (p *bufPool) reader(src io.Reader, maxPacket int) *protocol.Reader {
	r, ok := pop(&p.readers)
	if !ok {
		return protocol.NewReader(src, maxPacket)
	}
	r.Reset(src)
	return r
}

// scratch is an empty scratch buffer: a kept one, or nil.
func (p *bufPool) scratch() []byte {
	b, _ := pop(&p.scratches)
	return b
}

// pop takes the last element of *s, clearing its slot so that the list
// does not keep it from the GC; false when *s is empty.
func pop[T any](s *[]T) (T, bool) {
	var zero T
	n := len(*s)
	if n == 0 {
		return zero, false
	}
	v := (*s)[n-1]
	(*s)[n-1] = zero
	*s = (*s)[:n-1]
	return v, true
}

// giveBack takes c's reader (which must hold no unread bytes) and
// scratch buffer.
func (p *bufPool) giveBack(c *conn) {
	if c.reader != nil && len(p.readers) < poolMax {
		c.reader.Reset(nil)
		p.readers = append(p.readers, c.reader)
	}
	if cap(c.scratch) > 0 && cap(c.scratch) <= maxScratch && len(p.scratches) < poolMax {
		p.scratches = append(p.scratches, c.scratch[:0])
	}
	c.reader, c.scratch = nil, nil
}
