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
	n := len(p.readers)
	if n == 0 {
		return protocol.NewReader(src, maxPacket)
	}
	r := p.readers[n-1]
	p.readers[n-1] = nil
	p.readers = p.readers[:n-1]
	r.Reset(src)
	return r
}

// scratch is an empty scratch buffer: a kept one, or nil.
func (p *bufPool) scratch() []byte {
	n := len(p.scratches)
	if n == 0 {
		return nil
	}
	b := p.scratches[n-1]
	p.scratches[n-1] = nil
	p.scratches = p.scratches[:n-1]
	return b
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
