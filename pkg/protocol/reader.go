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

	lw      LowWater // r, when it has a low-water mark
	lowat   int      // the source's low-water mark as last set (0: never set; -1: off)
	memo    scanMemo // where the scan of the partial packet at start stopped
	walked  int      // array elements the scans walked (tests check the work per packet)
	frames  uint64   // frames returned
	partial bool     // the last Next stopped inside a packet
}

// LowWater is implemented by a source that can hold back its reader until
// at least n bytes have come (a TCP socket's SO_RCVLOWAT; a read still
// returns at once the bytes already there). A Reader whose source has it
// asks for what the packet it is in still needs at least, when the packet
// is lowWaterMin bytes or more, and for 1 again before it reads on: a
// packet trickled a few bytes per write then wakes its reader a few times,
// not once per write. An error turns it off for the stream.
type LowWater interface {
	SetReadLowWater(n int) error
}

// lowWaterMin is the smallest packet for which a Reader sets its source's
// low-water mark: more than any packet a client sends in the normal
// course (a chat is under 300 bytes), so that ordinary traffic never
// costs the calls.
const lowWaterMin = 512

// NewReader returns a Reader of r that refuses packets larger than
// maxPacket bytes (ErrTooLarge); maxPacket <= 0 means DefaultMaxPacket.
func NewReader(r io.Reader, maxPacket int) *Reader {
	if maxPacket <= 0 {
		maxPacket = DefaultMaxPacket
	}
	lw, _ := r.(LowWater)
	return &Reader{r: r, max: maxPacket, lw: lw}
}

// Reset makes r a new Reader of src with the same limit, keeping its
// buffer unless a large packet grew it: what a pool of readers needs.
func (r *Reader) Reset(src io.Reader) {
	buf := r.buf
	if len(buf) > initialBuffer {
		buf = nil
	}
	lw, _ := src.(LowWater)
	*r = Reader{r: src, max: r.max, buf: buf, lw: lw}
}

// Buffered returns the number of bytes read from the stream but not yet
// returned as frames.
func (r *Reader) Buffered() int { return r.end - r.start }

// Partial reports whether the last call of Next stopped inside a packet:
// it returned a retryable error (a deadline, a would-block) with the
// packet's first bytes buffered and the rest still to come. packet
// numbers that packet in the stream (0 for the first; it is the count
// of frames returned before it), so that a caller bounding how long a
// begun packet may take can tell the same packet, still partial, from
// a later one: it notes the time when it first sees a packet number
// partial, and closes the connection if the same number is partial
// past its deadline.
func (r *Reader) Partial() (packet uint64, ok bool) {
	return r.frames, r.partial && r.err == nil
}

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
			d := dec{b: r.buf[r.start:r.end], limit: r.max, memo: &r.memo}
			d.scan()
			r.walked += d.walked
			if d.code == nil {
				raw := r.buf[r.start : r.start+d.off : r.start+d.off]
				r.start += d.off
				r.timeout = nil
				r.memo = scanMemo{}
				r.frames++
				r.partial = false
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
			r.partial = r.end > r.start
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

// lowWater tells a source with LowWater how many bytes to wait for: the
// shortfall of a large packet, else 1 (any byte).
func (r *Reader) lowWater(need, short int) {
	if r.lowat < 0 {
		return
	}
	n := 1
	if need >= lowWaterMin {
		n = max(short, 1)
	}
	if n == r.lowat || n == 1 && r.lowat == 0 {
		return
	}
	if r.lw.SetReadLowWater(n) != nil {
		r.lowat = -1
		return
	}
	r.lowat = n
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
		if r.lw != nil {
			r.lowWater(need, need-(r.end-r.start))
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
