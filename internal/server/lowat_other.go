//go:build !linux

package server

import (
	"io"
	"net"
)

// withLowWater is the source of a connection's packet reader (no
// low-water mark off Linux).
func withLowWater(nc net.Conn) io.Reader { return nc }
