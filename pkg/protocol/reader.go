package protocol

import (
	"errors"
	"io"
)

// initialBuffer is the Reader's starting buffer size: enough for every
// packet of a VolanoMark chat, small enough for 20,000 connections.
const initialBuffer = 512

// Frame is one complete packet found by Reader.Next. Raw and Body point into
// the Reader's buffer and are valid only until the next call of Next.
type Frame struct {
	ID   ID
	Type Type
	Raw  []byte // the whole packet, header included
	Body []byte // the packet after the header
}

// Decode decodes the frame into a typed packet (allocating; the packet does
// not refer to the Reader's buffer).
func (f Frame) Decode() (Packet, error) { return DecodeMessage(f.Raw) }

// Reader splits a byte stream (a TCP connection) into packets. Since the
// stream has no length prefixes, it walks each packet's layout to find its
// end; it does not check string contents (Frame.Decode and ParseChat do).
//
// The buffer starts at 512 bytes and grows only when one packet needs more,
// never beyond maxPacket; once such a packet has been consumed and nothing
// is buffered, it goes back to 512 bytes. In steady state Next does not
// allocate.
type Reader struct {
	r     io.Reader
	max   int
	buf   []byte
	start int   // first unconsumed byte
	end   int   // end of the bytes read
	err   error // sticky error returned by Next
	rerr  error // error from the underlying reader, after its bytes

	timeout error // a deadline error that came with bytes, returned if they do not complete a packet
}

// NewReader returns a Reader of r that refuses packets larger than
// maxPacket bytes (ErrTooLarge); maxPacket <= 0 means DefaultMaxPacket.
func NewReader(r io.Reader, maxPacket int) *Reader {
	if maxPacket <= 0 {
		maxPacket = DefaultMaxPacket
	}
	return &Reader{r: r, max: maxPacket}
}

// Reset makes r a new Reader of src with the same limit, keeping its
// buffer unless a large packet grew it: what a pool of readers needs.
func (r *Reader) Reset(src io.Reader) {
	buf := r.buf
	if len(buf) > initialBuffer {
		buf = nil
	}
	*r = Reader{r: src, max: r.max, buf: buf}
}

// Buffered returns the number of bytes read from the stream but not yet
// returned as frames.
func (r *Reader) Buffered() int { return r.end - r.start }

// Next returns the next complete packet. It returns io.EOF when the stream
// ends cleanly between packets and io.ErrUnexpectedEOF when it ends inside
// one. A packet that is malformed in structure (unknown id, negative count,
// larger than maxPacket) gives a *DecodeError. Errors are sticky: the stream
// cannot be followed past them; except a timeout from the underlying reader
// (a read deadline), after which Next may be called again.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	for {
		need := 1
		if r.end > r.start {
			d := dec{b: r.buf[r.start:r.end], limit: r.max}
			d.scan()
			if d.code == nil {
				raw := r.buf[r.start : r.start+d.off : r.start+d.off]
				r.start += d.off
				r.timeout = nil
				if r.start == r.end {
					r.start, r.end = 0, 0
				}
				return Frame{ID: d.id, Type: d.typ, Raw: raw, Body: raw[d.hdrLen:]}, nil
			}
			if d.code != ErrIncomplete {
				r.err = d.error()
				return Frame{}, r.err
			}
			need = d.need
		}
		if err := r.fill(need); err != nil {
			if !isTimeout(err) {
				r.err = err
			}
			return Frame{}, err
		}
	}
}

// ReadPacket returns the next packet decoded (Next followed by
// Frame.Decode). A packet whose strings are malformed gives an error, but
// the stream stays in step (the packet's extent was known): the caller
// decides whether to go on.
func (r *Reader) ReadPacket() (Packet, error) {
	f, err := r.Next()
	if err != nil {
		return nil, err
	}
	return f.Decode()
}

// isTimeout reports whether err is a passed deadline (net.Error with
// Timeout, os.ErrDeadlineExceeded): not an end of the stream.
func isTimeout(err error) bool {
	// errors.As only for a wrapped error: its target escapes, an
	// allocation each time (the epoll engine's reads end with a timeout
	// each, and every stream with io.EOF).
	switch e := err.(type) {
	case interface{ Timeout() bool }:
		return e.Timeout()
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
	default:
		return false
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// maxEmptyReads bounds successive (0, nil) reads, as bufio does.
const maxEmptyReads = 100

// fill reads until at least need bytes are buffered from r.start.
func (r *Reader) fill(need int) error {
	if len(r.buf) > initialBuffer && need <= initialBuffer && r.end-r.start <= initialBuffer/2 {
		// A large packet grew the buffer and has been consumed (its
		// frame is no longer valid): give the memory back, so that one
		// large packet does not keep a connection large for its life.
		nb := make([]byte, initialBuffer)
		r.end = copy(nb, r.buf[r.start:r.end])
		r.start = 0
		r.buf = nb
	}
	if r.buf == nil {
		r.buf = make([]byte, min(initialBuffer, r.max))
	}
	if need > len(r.buf) {
		// need <= r.max: dec checks it against the limit.
		size := max(need, 2*len(r.buf))
		size = min(size, r.max)
		nb := make([]byte, size)
		r.end = copy(nb, r.buf[r.start:r.end])
		r.start = 0
		r.buf = nb
	} else if r.start+need > len(r.buf) {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	empty := 0
	for r.end-r.start < need {
		if err := r.timeout; err != nil {
			r.timeout = nil
			return err
		}
		if r.rerr != nil {
			if r.rerr != io.EOF {
				return r.rerr
			}
			if r.end == r.start {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		n, err := r.r.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			return errors.New("protocol: io.Reader returned an invalid count")
		}
		r.end += n
		switch {
		case err != nil && isTimeout(err):
			// A read deadline passed: the bytes so far stay buffered and
			// the next call reads on, so a caller may use deadlines to
			// wait with a timeout (an idle check, say). If the bytes that
			// came with it complete a packet, that packet comes first.
			if r.end-r.start >= need {
				r.timeout = err
				return nil
			}
			return err
		case err != nil:
			// Bytes read with the error come first.
			r.rerr = err
		case n == 0:
			if empty++; empty >= maxEmptyReads {
				return io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
	return nil
}
