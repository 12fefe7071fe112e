package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Operation codes (enum io_uring_op) and flags used here.
const (
	OpPollAdd     = 6
	OpAsyncCancel = 14
	OpRead        = 22
	OpSend        = 26
	OpRecv        = 27

	// AsyncCancelAny cancels every request of the ring.
	AsyncCancelAny = 1 << 2

	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featExtArg     = 1 << 8

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000
)

// SQE is a submission queue entry (struct io_uring_sqe, 64 bytes).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	pad         uint64
}

// CQE is a completion queue entry (struct io_uring_cqe, 16 bytes).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

type sqOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, resv1 uint32
	UserAddr                                                        uint64
}

type cqOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, resv1 uint32
	UserAddr                                                        uint64
}

type params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	resv                                                                   [3]uint32
	SQOff                                                                  sqOffsets
	CQOff                                                                  cqOffsets
}

type getEventsArg struct {
	Sigmask   uint64
	SigmaskSz uint32
	pad       uint32
	Ts        uint64
}

// Ring is one io_uring instance.
type Ring struct {
	fd       int
	features uint32
	flags    uint32 // the setup flags
	single   bool   // one mapping holds both rings
	sqMap    []byte
	cqMap    []byte
	sqeMap   []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqEntries      uint32
	sqes           []SQE
	sqeHead        uint32 // published up to here
	sqeTail        uint32 // prepared up to here

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE
}

// ErrNoExtArg is returned by New when the kernel cannot wait with a
// timeout in io_uring_enter (IORING_FEAT_EXT_ARG, Linux 5.11).
var ErrNoExtArg = errors.New("io_uring: the kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11 or later)")

// Setup flags (IORING_SETUP_*) for NewWith.
const (
	// SetupCQSize: the completion queue has Options.CQEntries entries.
	SetupCQSize = 1 << 3
	// SetupSubmitAll: an entry that fails at submission does not stop
	// the ones after it (Linux 5.18).
	SetupSubmitAll = 1 << 7
	// SetupCoopTaskrun: the kernel does not interrupt the ring's thread
	// to run completions; they run when it enters the kernel (5.19).
	SetupCoopTaskrun = 1 << 8
	// SetupSingleIssuer: only the thread that made the ring submits (6.0).
	SetupSingleIssuer = 1 << 12
)

// Options are NewWith's settings.
type Options struct {
	// Flags are IORING_SETUP_* flags (the Setup constants).
	Flags uint32
	// CQEntries is the completion queue's size with SetupCQSize.
	CQEntries uint32
}

// New sets up a ring of entries submission entries (the completion queue
// has twice as many, the kernel's default), with no setup flags.
func New(entries uint32) (*Ring, error) { return NewWith(entries, Options{}) }

// NewWith sets up a ring of entries submission entries with the setup
// flags of o. The errors of io_uring_setup wrap its errno: ENOSYS (no
// io_uring in this kernel), EPERM (sysctl kernel.io_uring_disabled, or a
// seccomp filter), EINVAL (a flag or size this kernel does not know).
func NewWith(entries uint32, o Options) (*Ring, error) {
	p := params{Flags: o.Flags, CQEntries: o.CQEntries}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), features: p.Features, flags: o.Flags}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	if p.Features&featExtArg == 0 {
		r.Close()
		return nil, ErrNoExtArg
	}
	return r, nil
}

// Flags are the setup flags the ring was made with (the Setup constants).
func (r *Ring) Flags() uint32 { return r.flags }

// NoDrop tells whether the kernel keeps completions that overflow the
// completion queue until there is room (IORING_FEAT_NODROP, 5.5).
func (r *Ring) NoDrop() bool { return r.features&featNoDrop != 0 }

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.SQOff.Array) + int(p.SQEntries)*4
	cqSize := int(p.CQOff.CQEs) + int(p.CQEntries)*int(unsafe.Sizeof(CQE{}))
	single := p.Features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sqMap, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring: map the submission ring: %w", err)
	}
	r.cqMap, r.single = r.sqMap, single
	if !single {
		if r.cqMap, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("io_uring: map the completion ring: %w", err)
		}
	}
	sqeSize := int(p.SQEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMap, err = unix.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring: map the submission entries: %w", err)
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	r.sqHead, r.sqTail = u32(r.sqMap, p.SQOff.Head), u32(r.sqMap, p.SQOff.Tail)
	r.sqMask, r.sqEntries = *u32(r.sqMap, p.SQOff.RingMask), *u32(r.sqMap, p.SQOff.RingEntries)
	array := unsafe.Slice(u32(r.sqMap, p.SQOff.Array), p.SQEntries)
	for i := range array {
		array[i] = uint32(i) // slot i holds entry i, as liburing sets it
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMap[0])), p.SQEntries)
	r.cqHead, r.cqTail = u32(r.cqMap, p.CQOff.Head), u32(r.cqMap, p.CQOff.Tail)
	r.cqMask = *u32(r.cqMap, p.CQOff.RingMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqMap[p.CQOff.CQEs])), p.CQEntries)
	return nil
}

// Close unmaps the ring and closes it; the kernel cancels what is still
// in flight.
func (r *Ring) Close() {
	if r.sqeMap != nil {
		_ = unix.Munmap(r.sqeMap)
	}
	if r.cqMap != nil && !r.single {
		_ = unix.Munmap(r.cqMap)
	}
	if r.sqMap != nil {
		_ = unix.Munmap(r.sqMap)
	}
	r.sqeMap, r.cqMap, r.sqMap = nil, nil, nil
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

// GetSQE returns the next free submission entry, zeroed, or nil when the
// queue is full (Submit, then try again).
func (r *Ring) GetSQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	next := r.sqeTail + 1
	if next-head > r.sqEntries {
		return nil
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail = next
	*sqe = SQE{}
	return sqe
}

// PrepRecv makes sqe a recv of up to n bytes at buf from fd.
func PrepRecv(sqe *SQE, fd int, buf unsafe.Pointer, n int, flags uint32, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.Addr, sqe.Len, sqe.OpFlags, sqe.UserData = OpRecv, int32(fd), uint64(uintptr(buf)), uint32(n), flags, userData
}

// PrepSend makes sqe a send of n bytes at buf on fd.
func PrepSend(sqe *SQE, fd int, buf unsafe.Pointer, n int, flags uint32, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.Addr, sqe.Len, sqe.OpFlags, sqe.UserData = OpSend, int32(fd), uint64(uintptr(buf)), uint32(n), flags, userData
}

// PrepPollAdd makes sqe a one-shot poll of fd for events (POLLIN,
// POLLOUT...); the completion's Res is the events that fired.
func PrepPollAdd(sqe *SQE, fd int, events uint32, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.OpFlags, sqe.UserData = OpPollAdd, int32(fd), events, userData
}

// PrepRead makes sqe a read of up to n bytes at buf from fd (at the
// file's position: an eventfd, a pipe).
func PrepRead(sqe *SQE, fd int, buf unsafe.Pointer, n int, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.Off, sqe.Addr, sqe.Len, sqe.UserData = OpRead, int32(fd), ^uint64(0), uint64(uintptr(buf)), uint32(n), userData
}

// PrepCancel makes sqe a cancellation of the request in flight whose user
// data is target.
func PrepCancel(sqe *SQE, target, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.Addr, sqe.UserData = OpAsyncCancel, -1, target, userData
}

// PrepCancelAll makes sqe a cancellation of every request in flight.
func PrepCancelAll(sqe *SQE, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.OpFlags, sqe.UserData = OpAsyncCancel, -1, AsyncCancelAny, userData
}

// flush publishes the prepared entries to the kernel and returns how many
// the kernel has not consumed yet.
func (r *Ring) flush() uint32 {
	if r.sqeHead != r.sqeTail {
		r.sqeHead = r.sqeTail
		atomic.StoreUint32(r.sqTail, r.sqeTail)
	}
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// Submit hands the prepared entries to the kernel without waiting.
func (r *Ring) Submit() error {
	n := r.flush()
	if n == 0 {
		return nil
	}
	_, err := r.enter(n, 0, 0, nil)
	return err
}

// SubmitWait submits the prepared entries and waits until at least
// wait completions are waiting (0: does not wait), for at most timeout
// (nil: no limit). One io_uring_enter. A timeout or an interrupted wait
// is not an error.
func (r *Ring) SubmitWait(wait uint32, timeout *unix.Timespec) error {
	n := r.flush()
	if wait == 0 || r.Ready() >= wait {
		if n == 0 {
			return nil
		}
		_, err := r.enter(n, 0, 0, nil)
		return err
	}
	var arg getEventsArg
	if timeout != nil {
		arg.Ts = uint64(uintptr(unsafe.Pointer(timeout)))
	}
	_, err := r.enter(n, wait, enterGetEvents|enterExtArg, &arg)
	if errors.Is(err, unix.ETIME) || errors.Is(err, unix.EINTR) {
		return nil
	}
	return err
}

// Unsubmitted is the number of entries prepared or published that the
// kernel has not consumed yet.
func (r *Ring) Unsubmitted() uint32 { return r.sqeTail - atomic.LoadUint32(r.sqHead) }

// SubmitNonblocking hands the prepared entries to the kernel with a raw
// system call: the Go scheduler is not told, which saves its bookkeeping
// and keeps the thread's processor. Only for entries the kernel never
// blocks on while submitting (non-blocking socket operations, polls):
// the call returns as soon as they are issued.
func (r *Ring) SubmitNonblocking() error {
	n := r.flush()
	for n > 0 {
		_, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
	return nil
}

// WaitNonblocking is SubmitWait with a raw system call and a timeout: the
// thread keeps its processor while it waits (the caller reserves one for
// the rest of the process). An interrupted wait returns EINTR (most
// likely the scheduler asking for the processor: the caller should
// yield); a timeout is not an error.
func (r *Ring) WaitNonblocking(wait uint32, timeout *unix.Timespec) error {
	n := r.flush()
	if r.Ready() >= wait {
		wait = 0
	}
	arg := getEventsArg{Ts: uint64(uintptr(unsafe.Pointer(timeout)))}
	flags := uintptr(enterGetEvents | enterExtArg)
	_, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(wait), flags,
		uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	switch errno {
	case 0, unix.ETIME:
		return nil
	}
	return errno
}

// Ready is the number of completions waiting to be consumed.
func (r *Ring) Ready() uint32 { return atomic.LoadUint32(r.cqTail) - *r.cqHead }

// SubmitAndWait submits the prepared entries and, when no completion is
// waiting, waits for one for at most timeout (liburing's
// io_uring_submit_and_wait_timeout with a wait of one): one io_uring_enter
// at most. A timeout or an interrupted wait is not an error.
func (r *Ring) SubmitAndWait(timeout *unix.Timespec) error {
	n := r.flush()
	if r.Ready() > 0 {
		if n == 0 {
			return nil
		}
		_, err := r.enter(n, 0, 0, nil)
		return err
	}
	arg := getEventsArg{Ts: uint64(uintptr(unsafe.Pointer(timeout)))}
	_, err := r.enter(n, 1, enterGetEvents|enterExtArg, &arg)
	if errors.Is(err, unix.ETIME) || errors.Is(err, unix.EINTR) {
		return nil
	}
	return err
}

func (r *Ring) enter(submit, wait, flags uint32, arg *getEventsArg) (int, error) {
	var argp, size uintptr
	if arg != nil {
		argp, size = uintptr(unsafe.Pointer(arg)), unsafe.Sizeof(*arg)
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(wait), uintptr(flags), argp, size)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			if wait == 0 {
				continue
			}
		}
		return 0, errno
	}
}

// Head is the position of the first waiting completion, Tail the
// position after the last: the completions waiting are Entry(Head()) to
// Entry(Tail()-1), consumed by Advance.
func (r *Ring) Head() uint32 { return *r.cqHead }

// Tail is the position after the last waiting completion (see Head).
func (r *Ring) Tail() uint32 { return atomic.LoadUint32(r.cqTail) }

// Entry is the completion at position i of the queue.
func (r *Ring) Entry(i uint32) *CQE { return &r.cqes[i&r.cqMask] }

// Advance marks n completions consumed.
func (r *Ring) Advance(n uint32) {
	if n > 0 {
		atomic.StoreUint32(r.cqHead, *r.cqHead+n)
	}
}
