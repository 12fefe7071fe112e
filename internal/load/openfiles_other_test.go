//go:build !unix

package load

import "errors"

func helperOpenFiles() int { return 3 }

func setOpenFilesLimit(string) error { return errors.New("open-files limit: unix only") }
