//go:build !linux

package sysinfo

import "errors"

// ProcessCPUs is 0 (unknown) where CPU affinity is not supported.
func ProcessCPUs(pid int) int { return 0 }

// AvailableCPUs is 0 (unknown) where CPU affinity is not supported.
func AvailableCPUs() int { return 0 }

// StartPinned calls start; a restriction to n > 0 processors is an error
// where CPU affinity is not supported.
func StartPinned(n int, start func() (pid int, err error)) error {
	if n > 0 {
		return errors.New("CPU affinity is supported on Linux only")
	}
	_, err := start()
	return err
}
