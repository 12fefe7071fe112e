//go:build !unix

package server

const canRawWrite = false

func writeNonblock(fd uintptr, b []byte) (int, error) { return 0, nil }

// useSendto: see write_unix.go (raw writes are unix only).
var useSendto = false
