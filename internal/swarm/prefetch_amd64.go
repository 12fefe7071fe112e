package swarm

// prefetch asks the processor to bring the cache line at addr in (a
// hint: no fault, whatever addr is; nothing waits for it).
func prefetch(addr uintptr)
