//go:build !unix

package sysinfo

func kernelRelease() string { return "" }

func openFilesLimit() (soft, hard uint64, err error) { return 0, 0, ErrUnsupported }

// RaiseOpenFilesLimit raises the soft open-files limit to the hard one where
// there is such a limit; here there is none: it returns ErrUnsupported.
func RaiseOpenFilesLimit() (soft, hard uint64, err error) { return 0, 0, ErrUnsupported }
