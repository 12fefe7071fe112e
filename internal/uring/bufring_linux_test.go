package uring

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMultishotBufRing: a multishot recv takes a provided buffer per
// arrival and stays armed; with incremental consumption several arrivals
// share a buffer; when the buffers run out it ends (ENOBUFS), and a
// recycled buffer serves the next recv.
func TestMultishotBufRing(t *testing.T) {
	for _, inc := range []bool{true, false} {
		name := "whole"
		if inc {
			name = "incremental"
		}
		t.Run(name, func(t *testing.T) { testMultishot(t, inc) })
	}
}

func testMultishot(t *testing.T, inc bool) {
	// a single-issuer ring refuses a submission from another thread
	// (EEXIST): the test's goroutine keeps the thread that made it
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := NewWith(8, Options{Flags: SetupCQSize | SetupSingleIssuer, CQEntries: 64})
	if err != nil && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, ErrNoExtArg)) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer r.Close()
	b, err := r.RegisterBufRing(3, 2, 16, inc)
	if errors.Is(err, ErrNoBufRing) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer b.Close()
	if inc && !b.Incremental() {
		t.Skip("no incremental buffer consumption in this kernel")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	type done struct {
		data        string
		bid         uint16
		more, whole bool
		res         int32
	}
	var got []done
	ts := unix.NsecToTimespec(int64(time.Second))
	next := func() done {
		// a wait ends early on a signal (the runtime's preemption): a
		// deadline, not a count of waits
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if r.Ready() == 0 {
				require.NoError(t, r.SubmitWait(1, &ts))
			}
			if r.Ready() == 0 {
				continue
			}
			e := r.Entry(r.Head())
			d := done{res: e.Res, more: e.Flags&CQEFMore != 0}
			if e.Flags&CQEFBuffer != 0 {
				data, bid, whole := b.Buf(e.Flags, e.Res)
				d.data, d.bid, d.whole = string(data), bid, whole
			}
			r.Advance(1)
			got = append(got, d)
			return d
		}
		t.Fatal("no completion")
		return done{}
	}
	send := func(s string) {
		_, err := unix.Write(fds[0], []byte(s))
		require.NoError(t, err)
	}

	PrepRecvMultishot(r.GetSQE(), fds[1], b.Group(), 7)
	require.NoError(t, r.Submit())
	send("hello")
	d := next()
	assert.Equal(t, "hello", d.data)
	assert.True(t, d.more, "still armed")
	first := d.bid
	send("world")
	d = next()
	assert.Equal(t, "world", d.data)
	if inc {
		assert.Equal(t, first, d.bid, "the rest of the same buffer")
		assert.False(t, d.whole)
		send("0123456789") // 10 in the 6 left: the rest in the next buffer
		d = next()
		assert.Equal(t, "012345", d.data)
		assert.True(t, d.whole, "used up")
		d = next()
		assert.Equal(t, "6789", d.data)
		assert.NotEqual(t, first, d.bid)
	} else {
		assert.NotEqual(t, first, d.bid)
		assert.True(t, d.whole)
	}
	// Both buffers are out: the next arrival ends the recv.
	b.Recycle(first)
	if inc {
		second := d.bid
		send("abcdefghijkl") // the 12 left in the second buffer
		d = next()
		assert.Equal(t, "abcdefghijkl", d.data)
		assert.Equal(t, second, d.bid)
		assert.True(t, d.whole)
		send("mnopqrstuvwxyz") // 14 of the recycled one's 16
		d = next()
		assert.Equal(t, "mnopqrstuvwxyz", d.data)
		assert.Equal(t, first, d.bid)
		assert.False(t, d.whole)
		send("0123") // 2 fit, then no buffer
		d = next()
		assert.Equal(t, "01", d.data)
		assert.True(t, d.whole)
	} else {
		send("again")
		d = next()
		assert.Equal(t, "again", d.data)
		assert.Equal(t, first, d.bid)
		send("nobuf")
	}
	d = next()
	assert.Equal(t, -int32(unix.ENOBUFS), d.res)
	assert.False(t, d.more, "out of buffers: the recv ended")
}
