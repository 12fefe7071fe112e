//go:build !linux && !darwin

package sysinfo

func distribution() string   { return "" }
func cpuModel() string       { return "" }
func memoryBytes() int64     { return 0 }
func ephemeralPorts() string { return "" }

func tcpCongestion() string { return "" }

func loopbackQuickACK() bool { return false }

// ReadProc is not supported outside Linux: it returns ErrUnsupported.
func ReadProc(pid int) (ProcStat, error) { return ProcStat{}, ErrUnsupported }

// PeakRSS is the peak resident set size of the current process; 0 where it
// is not known (outside Linux and macOS).
func PeakRSS() int64 { return 0 }
