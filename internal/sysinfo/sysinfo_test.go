package sysinfo

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCollectPortable(t *testing.T) {
	env := Collect()
	assert.Equal(t, runtime.GOOS, env.OS)
	assert.Equal(t, runtime.GOARCH, env.Arch)
	assert.Equal(t, runtime.NumCPU(), env.CPUs)
	assert.Equal(t, runtime.Version(), env.GoVersion)
	assert.Equal(t, runtime.GOMAXPROCS(0), env.GOMAXPROCS)
	assert.NotEmpty(t, env.Hostname)
}

func TestParseOSRelease(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n", "Debian GNU/Linux 13 (trixie)"},
		{"# comment\nNAME='Alpine Linux'\nVERSION=3.20\n", "Alpine Linux 3.20"},
		{"PRETTY_NAME=Plain\n", "Plain"},
		{"", ""},
		{"garbage\n=\n", ""},
	} {
		assert.Equal(t, tc.want, parseOSRelease(tc.in), tc.in)
	}
}
