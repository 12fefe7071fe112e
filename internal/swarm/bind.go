package swarm

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
)

// MaxBindAddresses bounds what ParseBind expands.
const MaxBindAddresses = 1 << 16

// ParseBind expands source-address specifications into addresses: each
// spec is a comma-separated list of an address ("127.0.0.2", "::1"), a
// range ("127.0.0.1-127.0.0.20") or a prefix ("127.0.1.0/24", whose
// network and broadcast addresses are left out for IPv4 prefixes shorter
// than /31). Each address gives the client its own ~28,000 ephemeral ports:
// on Linux every address of 127.0.0.0/8 is loopback.
func ParseBind(specs []string) ([]netip.Addr, error) {
	var out []netip.Addr
	add := func(a netip.Addr) error {
		if len(out) >= MaxBindAddresses {
			return fmt.Errorf("--bind: more than %d addresses", MaxBindAddresses)
		}
		out = append(out, a.Unmap())
		return nil
	}
	for _, spec := range specs {
		for _, s := range strings.Split(spec, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			switch {
			case strings.Contains(s, "/"):
				p, err := netip.ParsePrefix(s)
				if err != nil {
					return nil, fmt.Errorf("--bind: %q is not an address prefix", s)
				}
				p = p.Masked()
				first, last := p.Addr(), lastOf(p)
				if p.Addr().Is4() && p.Bits() < 31 {
					first, last = first.Next(), last.Prev()
				}
				for a := first; a.IsValid() && a.Compare(last) <= 0; a = a.Next() {
					if err := add(a); err != nil {
						return nil, err
					}
				}
			case strings.Contains(s, "-"):
				lo, hi, _ := strings.Cut(s, "-")
				a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
				b, err2 := netip.ParseAddr(strings.TrimSpace(hi))
				if err1 != nil || err2 != nil || a.Is4() != b.Is4() || a.Compare(b) > 0 {
					return nil, fmt.Errorf("--bind: %q is not an address range", s)
				}
				for x := a; x.IsValid() && x.Compare(b) <= 0; x = x.Next() {
					if err := add(x); err != nil {
						return nil, err
					}
				}
			default:
				a, err := netip.ParseAddr(s)
				if err != nil {
					return nil, fmt.Errorf("--bind: %q is not an address", s)
				}
				if err := add(a); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// lastOf is the last address of a masked prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// binder hands out source addresses round-robin.
type binder struct {
	addrs []*net.TCPAddr
	next  atomic.Uint64
}

func newBinder(addrs []netip.Addr) *binder {
	b := &binder{}
	for _, a := range addrs {
		b.addrs = append(b.addrs, net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
	}
	return b
}

// local returns the next source address, nil when none is configured.
func (b *binder) local() *net.TCPAddr {
	if b == nil || len(b.addrs) == 0 {
		return nil
	}
	return b.addrs[(b.next.Add(1)-1)%uint64(len(b.addrs))]
}
