package sysinfo

import (
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInterfaceOf(t *testing.T) {
	if runtime.GOOS == "linux" {
		assert.Equal(t, "lo", InterfaceOf(net.IPv4(127, 0, 0, 1)))
	}
	assert.Empty(t, InterfaceOf(net.ParseIP("192.0.2.77")), "no interface has a documentation address")
}

func TestLinkSpeed(t *testing.T) {
	assert.Zero(t, LinkSpeed("lo"), "loopback has no speed")
	assert.Zero(t, LinkSpeed("../../etc/passwd"), "a name is a name, not a path")
	assert.Zero(t, LinkSpeed(""))
	assert.Zero(t, LinkSpeed("no-such-interface"))
}
