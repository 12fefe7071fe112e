package sysinfo

// OpenFilesLimit is this process's open-files limit (RLIMIT_NOFILE) now,
// soft and hard: -1 for unlimited, 0 when unknown (not Unix).
func OpenFilesLimit() (soft, hard int64) {
	s, h, err := openFilesLimit()
	if err != nil {
		return 0, 0
	}
	return clampLimit(s), clampLimit(h)
}
