//go:build !linux

package load

func processCPUs(pid int) int { return 0 }
