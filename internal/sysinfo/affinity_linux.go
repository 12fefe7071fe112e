package sysinfo

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcessCPUs is the number of processors process pid may run on (0 if
// unknown; pid 0 is this process).
func ProcessCPUs(pid int) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return 0
	}
	return set.Count()
}

// AvailableCPUs is the number of processors this process may run on.
func AvailableCPUs() int { return ProcessCPUs(0) }

// firstCPUs is the set of the first n processors of this process's own
// affinity mask.
func firstCPUs(n int) (unix.CPUSet, error) {
	var own, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		return set, err
	}
	for cpu := 0; cpu < len(own)*64 && set.Count() < n; cpu++ {
		if own.IsSet(cpu) {
			set.Set(cpu)
		}
	}
	if set.Count() < n {
		return set, fmt.Errorf("only %d processors available, not %d", set.Count(), n)
	}
	return set, nil
}

// StartPinned calls start, which starts a process and returns its pid,
// with the process restricted to the first n processors this process may
// use (n <= 0: no restriction). The calling thread takes the mask for the
// fork, so that the child and every thread it ever creates inherit it
// (what taskset does), and gets its own mask back after; the child's
// threads are set once more after the start in case one was created on
// another path.
func StartPinned(n int, start func() (pid int, err error)) error {
	if n <= 0 {
		_, err := start()
		return err
	}
	set, err := firstCPUs(n)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("set CPU affinity: %w", err)
	}
	pid, err := start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restore CPU affinity: %w", rerr)
	}
	if err != nil {
		return err
	}
	if tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task"); err == nil {
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				_ = unix.SchedSetaffinity(tid, &set)
			}
		}
	}
	return nil
}
