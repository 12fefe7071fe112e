package load

import "golang.org/x/sys/unix"

// processCPUs is the number of processors process pid may run on (0 if
// unknown).
func processCPUs(pid int) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return 0
	}
	return set.Count()
}
