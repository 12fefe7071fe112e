package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetPrefersLinkerFlags(t *testing.T) {
	read := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, true
	}
	i := get("v1.0.0", "deadbeef", "2026-01-01", read)
	assert.Equal(t, "v1.0.0", i.Version)
	assert.Equal(t, "deadbeef", i.Commit)
	assert.Contains(t, i.String(), "volanogo v1.0.0 (commit deadbeef, built 2026-01-01) go")
}

func TestGetFallsBackToBuildInfo(t *testing.T) {
	read := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123456789abcdef0123"},
				{Key: "vcs.time", Value: "2026-11-21T00:00:00Z"},
				{Key: "vcs.modified", Value: "true"},
			}}, true
	}
	i := get("", "", "", read)
	assert.Equal(t, "v0.3.1", i.Version)
	assert.Contains(t, i.String(), "commit 0123456789ab-dirty")
}

func TestGetDevel(t *testing.T) {
	read := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true
	}
	assert.Equal(t, "devel", get("", "", "", read).Version)
	assert.Equal(t, "devel", get("", "", "", func() (*debug.BuildInfo, bool) { return nil, false }).Version)
}

func TestPlaceholdersAreUnset(t *testing.T) {
	i := get("0.0.1-next", "none", "unknown", func() (*debug.BuildInfo, bool) { return nil, false })
	assert.Equal(t, "0.0.1-next", i.Version)
	assert.Empty(t, i.Commit)
	assert.NotContains(t, i.String(), "none")
}
