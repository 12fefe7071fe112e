//go:build !unix

package campaign

import "errors"

func setOpenFiles(string) error { return errors.New("open-files limit: unix only") }
