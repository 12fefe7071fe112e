//go:build !amd64

package swarm

// prefetch is a no-op where the engine has no prefetch instruction.
func prefetch(uintptr) {}
