package load

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// processCPUs is the number of processors process pid may run on (0 if
// unknown).
func processCPUs(pid int) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return 0
	}
	return set.Count()
}

// availableCPUs is the number of processors this process may run on.
func availableCPUs() int { return processCPUs(0) }

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

// startOnCPUs starts cmd restricted to the first cpus processors (0: no
// restriction). The calling thread takes the mask for the fork, so that
// the child and every thread it ever creates inherit it (what taskset
// does), and gets its own mask back after; the child's threads are set
// once more after the start in case one was created on another path.
func startOnCPUs(cmd *exec.Cmd, cpus int) error {
	if cpus <= 0 {
		return cmd.Start()
	}
	set, err := firstCPUs(cpus)
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
	err = cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restore CPU affinity: %w", rerr)
	}
	if err != nil {
		return err
	}
	pid := cmd.Process.Pid
	if tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task"); err == nil {
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				_ = unix.SchedSetaffinity(tid, &set)
			}
		}
	}
	return nil
}
