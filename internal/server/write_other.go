//go:build !unix

package server

const canRawWrite = false

func writeNonblock(fd uintptr, b []byte) (int, error) { return 0, nil }
