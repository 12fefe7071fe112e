package swarm

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// RTTSamples is how many round trips MeasureNetwork times.
const RTTSamples = 10

// MeasureNetwork times the round trip to the server of t before a run:
// RTTSamples TCP connects, one after the other (the kernel's handshake,
// SYN to SYN-ACK: the VOLANO server answers no request before an Access,
// and an Access would create a room, so its protocol has no ping to
// time), each closed at once. It also names the client's interface
// toward the server and reads its link speed. Every connect has timeout;
// the whole measurement stops at the first that fails.
func MeasureNetwork(ctx context.Context, t Target, timeout time.Duration) (*results.Network, error) {
	addr := t.Addr
	if t.Transport == TransportWS {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("measure the round trip: %w", err)
		}
		addr = u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), map[string]string{"wss": "443"}[u.Scheme])
			if u.Scheme != "wss" {
				addr = net.JoinHostPort(u.Hostname(), "80")
			}
		}
	}
	d := &net.Dialer{Timeout: timeout}
	n := &results.Network{Method: "connect"}
	var rtts []time.Duration
	for i := 0; i < RTTSamples; i++ {
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", addr)
		rtt := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("measure the round trip to %s: %w", addr, err)
		}
		if i == 0 {
			local, _ := c.LocalAddr().(*net.TCPAddr)
			remote, _ := c.RemoteAddr().(*net.TCPAddr)
			if remote != nil {
				n.Loopback = remote.IP.IsLoopback()
			}
			if local != nil {
				n.Interface = sysinfo.InterfaceOf(local.IP)
				if n.Interface != "" && !n.Loopback {
					n.LinkMbps = sysinfo.LinkSpeed(n.Interface)
				}
			}
		}
		_ = c.Close()
		rtts = append(rtts, rtt)
	}
	slices.Sort(rtts)
	n.RTTSamples = len(rtts)
	n.RTTMinSeconds = rtts[0].Seconds()
	n.RTTSeconds = rtts[len(rtts)/2].Seconds()
	if len(rtts)%2 == 0 {
		n.RTTSeconds = (rtts[len(rtts)/2-1] + rtts[len(rtts)/2]).Seconds() / 2
	}
	return n, nil
}
