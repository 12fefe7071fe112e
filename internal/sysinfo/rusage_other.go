//go:build !unix

package sysinfo

// CPUTimes is 0, 0 where getrusage(2) is not available.
func CPUTimes() (user, sys float64) { return 0, 0 }
