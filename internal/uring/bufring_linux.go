package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flags of multishot receives with provided buffers.
const (
	// sqeBufferSelect (IOSQE_BUFFER_SELECT): the request takes its
	// buffer from a provided-buffer group.
	sqeBufferSelect = 1 << 5
	// recvMultishot (IORING_RECV_MULTISHOT, in the SQE's ioprio): the
	// receive stays armed and completes once per arrival.
	recvMultishot = 1 << 1

	// CQEFBuffer (IORING_CQE_F_BUFFER): the completion used a provided
	// buffer, whose id is Flags >> CQEBufferShift.
	CQEFBuffer = 1 << 0
	// CQEFMore (IORING_CQE_F_MORE): a multishot request stays armed;
	// without it this is its last completion.
	CQEFMore = 1 << 1
	// CQEFBufMore (IORING_CQE_F_BUF_MORE): an incrementally consumed
	// buffer is not used up; the next completion with it continues where
	// this one ended.
	CQEFBufMore = 1 << 4
	// CQEBufferShift: the buffer id is in the top 16 bits of the flags.
	CQEBufferShift = 16

	registerPbufRing   = 22
	unregisterPbufRing = 23
	pbufRingInc        = 2 // IOU_PBUF_RING_INC (Linux 6.12)
)

// bufReg is struct io_uring_buf_reg.
type bufReg struct {
	RingAddr    uint64
	RingEntries uint32
	Bgid        uint16
	Flags       uint16
	resv        [3]uint64
}

// bufEntry is struct io_uring_buf (16 bytes); the ring's tail is the last
// 16 bits of its first entry.
type bufEntry struct {
	Addr uint64
	Len  uint32
	Bid  uint16
	resv uint16
}

// BufRing is a ring of provided buffers registered with a Ring (Linux
// 5.19): the kernel takes a buffer for each receive that completes, so
// that memory is spent on data that arrived, not on every connection
// that may receive. Buffers are of one size; Buf gives a completion's
// bytes and Recycle hands the buffer back. Owned by the Ring's goroutine.
type BufRing struct {
	r       *Ring
	group   uint16
	mem     []byte // the ring of entries, then the buffers
	entries []bufEntry
	tail    *uint16
	mask    uint16
	n       int
	size    int
	base    unsafe.Pointer // the first buffer
	// Incremental: the kernel consumes a buffer piece by piece (Linux
	// 6.12, IOU_PBUF_RING_INC); off is where its next piece begins.
	inc bool
	off []uint32
}

// ErrNoBufRing is returned by RegisterBufRing when the kernel has no
// provided-buffer rings (before Linux 5.19).
var ErrNoBufRing = errors.New("io_uring: the kernel lacks provided-buffer rings (Linux 5.19 or later)")

// RegisterBufRing registers group, a ring of n buffers of size bytes each
// (n a power of two up to 32768), all handed to the kernel. With
// incremental, the kernel fills a buffer with several receives before it
// takes the next (Linux 6.12); where it cannot, the buffers are used
// whole (BufRing.Incremental tells which).
func (r *Ring) RegisterBufRing(group uint16, n, size int, incremental bool) (*BufRing, error) {
	if n <= 0 || n > 32768 || n&(n-1) != 0 || size <= 0 {
		return nil, fmt.Errorf("io_uring: a buffer ring of %d buffers of %d bytes", n, size)
	}
	ringBytes := n * int(unsafe.Sizeof(bufEntry{}))
	page := unix.Getpagesize()
	ringBytes = (ringBytes + page - 1) &^ (page - 1)
	mem, err := unix.Mmap(-1, 0, ringBytes+n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring: map a buffer ring: %w", err)
	}
	b := &BufRing{r: r, group: group, mem: mem, n: n, size: size, mask: uint16(n - 1)}
	b.entries = unsafe.Slice((*bufEntry)(unsafe.Pointer(&mem[0])), n)
	b.tail = &b.entries[0].resv
	b.base = unsafe.Pointer(&mem[ringBytes])
	reg := bufReg{RingAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), RingEntries: uint32(n), Bgid: group}
	flags := []uint16{0}
	if incremental {
		flags = []uint16{pbufRingInc, 0}
	}
	for _, f := range flags {
		reg.Flags = f
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
		if errno == 0 {
			b.inc = f == pbufRingInc
			err = nil
			break
		}
		err = errno
	}
	if err != nil {
		_ = unix.Munmap(mem)
		if errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("%w: %w", ErrNoBufRing, err)
		}
		return nil, fmt.Errorf("io_uring: register a buffer ring: %w", err)
	}
	if b.inc {
		b.off = make([]uint32, n)
	}
	for i := range n {
		b.put(uint16(i), uint16(i))
	}
	b.publish(uint16(n))
	return b, nil
}

// put writes buffer bid at ring position pos (not yet published).
func (b *BufRing) put(pos, bid uint16) {
	e := &b.entries[pos&b.mask]
	e.Addr = uint64(uintptr(unsafe.Add(b.base, int(bid)*b.size)))
	e.Len = uint32(b.size)
	e.Bid = bid
}

// Incremental tells whether the kernel consumes buffers piece by piece.
func (b *BufRing) Incremental() bool { return b.inc }

// Group is the buffer group's id, for PrepRecvMultishot.
func (b *BufRing) Group() uint16 { return b.group }

// Buf is the bytes a completion with flags and res > 0 received in its
// buffer (valid until the buffer is recycled), the buffer's id, and
// whether the buffer is used up (recycle it once its bytes are read):
// with incremental consumption, a buffer the kernel goes on filling is
// not.
func (b *BufRing) Buf(flags uint32, res int32) (data []byte, bid uint16, done bool) {
	bid = uint16(flags >> CQEBufferShift)
	if int(bid) >= b.n {
		return nil, bid, false
	}
	off := uint32(0)
	done = true
	if b.inc {
		off = b.off[bid]
		if flags&CQEFBufMore != 0 {
			b.off[bid] = off + uint32(max(res, 0))
			done = false
		}
	}
	if res <= 0 || int(off)+int(res) > b.size {
		return nil, bid, done
	}
	p := unsafe.Slice((*byte)(unsafe.Add(b.base, int(bid)*b.size+int(off))), int(res))
	return p, bid, done
}

// Recycle hands buffer bid back to the kernel, whole.
func (b *BufRing) Recycle(bid uint16) {
	if int(bid) >= b.n {
		return
	}
	if b.inc {
		b.off[bid] = 0
	}
	t := *b.tail
	b.put(t, bid)
	b.publish(t + 1)
}

// publish stores the ring's tail with release ordering. Go has no 16-bit
// atomic store: the tail shares a 32-bit word with the first entry's
// buffer id, which only this process writes, so the word is stored
// whole, in memory order.
func (b *BufRing) publish(tail uint16) {
	w := [2]uint16{b.entries[0].Bid, tail}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.entries[0].Bid)), *(*uint32)(unsafe.Pointer(&w)))
}

// Close unregisters the ring and unmaps its memory; nothing may be in
// flight on it any more.
func (b *BufRing) Close() {
	if b.mem == nil {
		return
	}
	reg := bufReg{Bgid: b.group}
	_, _, _ = unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(b.r.fd), unregisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	_ = unix.Munmap(b.mem)
	b.mem = nil
}

// PrepRecvMultishot makes sqe a multishot recv from fd into the buffers
// of group: it completes once per arrival (CQEFMore while it stays
// armed), each time in a buffer of the group (CQEFBuffer).
func PrepRecvMultishot(sqe *SQE, fd int, group uint16, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.UserData = OpRecv, int32(fd), userData
	sqe.Flags = sqeBufferSelect
	sqe.IOPrio = recvMultishot
	sqe.BufIndex = group
}

// Registered files: a request on a registered file (FixedFile) skips
// the lookup and reference count of its descriptor.
const (
	registerFiles2      = 13
	registerFilesUpdate = 6
	rsrcRegisterSparse  = 1 << 0
	sqeFixedFile        = 1 << 0
)

type rsrcRegister struct {
	Nr    uint32
	Flags uint32
	resv2 uint64
	Data  uint64
	Tags  uint64
}

type filesUpdate struct {
	Offset uint32
	resv   uint32
	Fds    uint64
}

// RegisterFilesSparse registers an empty table of n files (Linux 5.19);
// UpdateFile fills its slots.
func (r *Ring) RegisterFilesSparse(n uint32) error {
	reg := rsrcRegister{Nr: n, Flags: rsrcRegisterSparse}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerFiles2, uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring: register a file table: %w", errno)
	}
	return nil
}

// UpdateFile puts fd in slot of the registered file table (-1 empties
// it; the ring holds a reference to a registered file, so a descriptor
// must leave the table for its close to end the file).
func (r *Ring) UpdateFile(slot uint32, fd int32) error {
	fds := [1]int32{fd}
	up := filesUpdate{Offset: slot, Fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerFilesUpdate, uintptr(unsafe.Pointer(&up)), 1, 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring: update a registered file: %w", errno)
	}
	return nil
}

// FixedFile makes sqe's request use slot of the registered file table
// instead of a descriptor.
func FixedFile(sqe *SQE, slot uint32) {
	sqe.Fd = int32(slot)
	sqe.Flags |= sqeFixedFile
}
