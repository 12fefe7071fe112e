//go:build !unix

package cli

import "errors"

func setOpenFiles(uint64) error { return errors.New("open-files limit: unix only") }
