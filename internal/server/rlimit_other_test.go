//go:build !unix

package server

import "errors"

// setOpenFiles: there is no open-files limit to set here.
func setOpenFiles(int) error { return errors.New("no open-files limit on this platform") }
