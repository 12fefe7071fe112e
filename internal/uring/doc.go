// Package uring is a minimal binding of Linux's io_uring: one ring, its
// submission and completion queues mapped into this process, and the few
// operations volanogo's kernel floor needs (recv, send, cancel). It makes
// the system calls itself (io_uring_setup, io_uring_enter) and follows
// liburing's conventions: the submission queue's index array is the
// identity, submissions are published by storing the tail, completions
// are consumed by advancing the head.
//
// A Ring is used by one goroutine at a time, best locked to its OS thread.
//
// It is for Linux only; on other systems the package is empty.
package uring
