//go:build !linux

package load

import (
	"errors"
	"os/exec"
)

func processCPUs(pid int) int { return 0 }

func availableCPUs() int { return 0 }

func startOnCPUs(cmd *exec.Cmd, cpus int) error {
	if cpus > 0 {
		return errors.New("--server-cpus: CPU affinity is supported on Linux only")
	}
	return cmd.Start()
}
