//go:build !unix

package server

const canRawWrite = false

func writeNonblock(fd uintptr, b []byte) (int, error) { return 0, nil }

// useSendto: see write_unix.go (raw writes are unix only).
var useSendto = false

// sendRaw is never called here: a connection has no descriptor (fd -1).
func sendRaw(fd int, b []byte) int { return 0 }
