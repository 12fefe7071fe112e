package sysinfo

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// InterfaceOf names the network interface that has ip among its
// addresses ("lo", "eth0", "veth1"); "" when none has it.
func InterfaceOf(ip net.IP) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, it := range ifs {
		addrs, err := it.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return it.Name
			}
		}
	}
	return ""
}

// LinkSpeed is an interface's speed in Mbit/s as the kernel reports it
// (/sys/class/net/NAME/speed); 0 when it is unknown: not Linux, a
// virtual interface that has none, a link that is down.
func LinkSpeed(name string) int64 {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "speed"))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}
