package swarm

import (
	_ "unsafe" // for go:linkname
)

// nanotime is the runtime's monotonic clock in nanoseconds: what
// time.Since reads, without building a time.Time. It is the one clock of
// the hot path (one read per message).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
