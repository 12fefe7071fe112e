//go:build unix && !linux

package campaign

import (
	"os"
	"syscall"
)

// childAttr are the attributes of every process the campaign starts: its
// own process group, so that the terminal's SIGINT reaches the campaign
// alone. Without a parent-death signal, a shard stops when its standard
// input (the campaign) closes.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// peakRSS is 0 (unknown) outside Linux: ru_maxrss has other units here.
func peakRSS(*os.ProcessState) int64 { return 0 }
