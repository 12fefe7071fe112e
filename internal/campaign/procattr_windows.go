package campaign

import (
	"os"
	"syscall"
)

// childAttr are the attributes of every process the campaign starts: a
// process group of its own, so that the console's Ctrl-C reaches the
// campaign alone. A shard stops when its standard input (the campaign)
// closes.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// peakRSS is 0 (unknown) on Windows.
func peakRSS(*os.ProcessState) int64 { return 0 }
