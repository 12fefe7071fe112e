//go:build unix

package leak

import "syscall"

// quietSignal is a signal nobody sends the test process.
var quietSignal = syscall.SIGUSR2
