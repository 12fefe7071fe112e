//go:build !unix

package load

func cpuTimes() (user, sys float64) { return 0, 0 }

func openFilesLimit() int64 { return -1 }
