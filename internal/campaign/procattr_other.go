//go:build !linux

package campaign

import "syscall"

// childAttr are the attributes of every process the campaign starts: its
// own process group, so that the terminal's SIGINT reaches the campaign
// alone. Without a parent-death signal, a shard stops when its standard
// input (the campaign) closes.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
