package uring

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The buffers TestSendRecvCancel lends the kernel, package-level so that they
// stay put.
var (
	recvBuffer [16]byte
	sendBuffer [5]byte
)

func TestSendRecvCancel(t *testing.T) {
	r, err := New(4)
	if err != nil && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, ErrNoExtArg)) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer r.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	// The kernel reads and writes these after the calls that hand them over
	// return, so they must not live on the goroutine's stack, which may move
	// (escape analysis kept a local make([]byte, 16) there).
	in, out := recvBuffer[:], sendBuffer[:]
	clear(in)
	copy(out, "hello")
	got := map[uint64]int32{}
	ts := unix.NsecToTimespec(100e6)
	wait := func(n int) {
		for i := 0; i < 50 && len(got) < n; i++ {
			require.NoError(t, r.SubmitAndWait(&ts))
			head, h := r.Head(), r.Head()
			for ; h != r.Tail(); h++ {
				got[r.Entry(h).UserData] = r.Entry(h).Res
			}
			r.Advance(h - head)
		}
	}
	PrepRecv(r.GetSQE(), fds[1], unsafe.Pointer(&in[0]), len(in), 0, 7)
	PrepSend(r.GetSQE(), fds[0], unsafe.Pointer(&out[0]), len(out), unix.MSG_DONTWAIT, 8)
	wait(2)
	PrepRecv(r.GetSQE(), fds[0], unsafe.Pointer(&in[8]), 8, 0, 9) // never completes: cancelled below
	require.NoError(t, r.Submit())
	PrepCancelAll(r.GetSQE(), 10)
	for range 3 {
		assert.NotNil(t, r.GetSQE())
	}
	assert.Nil(t, r.GetSQE(), "a ring of 4 is full after 4")
	r.sqeTail -= 3 // give back the three taken to test
	wait(4)
	assert.Equal(t, int32(5), got[7])
	assert.Equal(t, "hello", string(in[:5]))
	assert.Equal(t, int32(5), got[8])
	assert.Equal(t, -int32(unix.ECANCELED), got[9])
	assert.Contains(t, got, uint64(10))
	assert.Zero(t, r.Ready())
	require.NoError(t, r.Submit())
}

var eventCounter [8]byte

func TestPollReadCancelOne(t *testing.T) {
	r, err := NewWith(8, Options{Flags: SetupCQSize, CQEntries: 32})
	if err != nil && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, ErrNoExtArg)) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer r.Close()
	assert.True(t, r.NoDrop())
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(efd)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	got := map[uint64]int32{}
	reap := func() {
		head, h := r.Head(), r.Head()
		for ; h != r.Tail(); h++ {
			got[r.Entry(h).UserData] = r.Entry(h).Res
		}
		r.Advance(h - head)
	}
	counter := eventCounter[:] // not on the stack, which may move
	PrepRead(r.GetSQE(), efd, unsafe.Pointer(&counter[0]), 8, 1)
	PrepPollAdd(r.GetSQE(), fds[0], unix.POLLOUT, 2) // writable now
	PrepPollAdd(r.GetSQE(), fds[1], unix.POLLIN, 3)  // never: cancelled
	assert.Equal(t, uint32(3), r.Unsubmitted())
	require.NoError(t, r.SubmitNonblocking())
	assert.Zero(t, r.Unsubmitted())
	ts := unix.NsecToTimespec(int64(time.Second))
	require.NoError(t, r.SubmitWait(1, &ts))
	reap()
	assert.Equal(t, int32(unix.POLLOUT), got[2]&unix.POLLOUT)
	assert.NotContains(t, got, uint64(1), "the eventfd is not written yet")

	_, err = unix.Write(efd, []byte{5, 0, 0, 0, 0, 0, 0, 0})
	require.NoError(t, err)
	PrepCancel(r.GetSQE(), 3, 4)
	for i := 0; i < 20 && len(got) < 4; i++ {
		require.NoError(t, r.SubmitWait(1, &ts))
		reap()
	}
	assert.Equal(t, int32(8), got[1])
	assert.Equal(t, byte(5), counter[0])
	assert.Equal(t, -int32(unix.ECANCELED), got[3])
	assert.Zero(t, got[4], "the cancellation found its request")
}
