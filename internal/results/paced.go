package results

import (
	"fmt"
	"strings"
	"time"
)

// PacedVerdict says whether a paced step broke, and why: connections
// refused or dropped, chats lost, duplicated, corrupted or (with strict
// order) reordered, a stall, an interruption, or the p99 delivery latency
// (from the schedule, else from the send) over slo.
func (d *Document) PacedVerdict(slo time.Duration) (broken bool, reason string) {
	var reasons []string
	for _, f := range d.Failures {
		switch f.Kind {
		case FailRefused, FailOpenFiles, FailNoSourcePort, FailTimeout, FailDenied:
			reasons = append(reasons, "connections refused ("+Describe(f.Kind)+": "+f.Explained()+")")
		case FailReset, FailClosed:
			reasons = append(reasons, "connections dropped ("+Describe(f.Kind)+": "+f.Explained()+")")
		case FailLost:
			reasons = append(reasons, fmt.Sprintf("%d messages lost", f.Count))
		case FailStall:
			reasons = append(reasons, "stalled: "+f.Explained())
		default:
			reasons = append(reasons, Describe(f.Kind)+": "+f.Explained())
		}
	}
	if d.Interrupted {
		reasons = append(reasons, "interrupted")
	}
	if r := d.SlowConnects(); r != "" {
		reasons = append(reasons, r)
	}
	h := d.Latency[LatencyDeliveryScheduled]
	if h == nil {
		h = d.Latency[LatencyDelivery]
	}
	if h != nil && slo > 0 && h.Count > 0 && time.Duration(h.P99) > slo {
		reasons = append(reasons, fmt.Sprintf("p99 delivery latency %s over the SLO of %s", FormatNanos(h.P99), slo))
	}
	if len(reasons) == 0 {
		return false, ""
	}
	return true, strings.Join(reasons, "; ")
}

// MinConnectShare is the share of the connect rate asked (--connect-rate)
// that a step's set-up must achieve: below it the server accepts
// connections too slowly, and a capacity step breaks.
const MinConnectShare = 0.9

// SlowConnects says how the set-up fell short of the connect rate asked
// (Config.ConnectRate): "" when none was asked, it was not measured, or
// it achieved at least MinConnectShare of it.
func (d *Document) SlowConnects() string {
	asked, got := d.Config.ConnectRate, d.Connections.ConnectRate
	if asked <= 0 || got <= 0 || got >= MinConnectShare*asked {
		return ""
	}
	s := fmt.Sprintf("connections accepted at %s a second, under %.0f%% of the %s asked (--connect-rate)",
		Sig3(got), 100*MinConnectShare, Sig3(asked))
	// The rooms connecting at once, each user after the last, bound the
	// rate too: at the median connect time, that bound may be the client's.
	if h := d.Latency[LatencyConnect]; h != nil && h.P50 > 0 && d.Config.ConnectConcurrency > 0 {
		bound := float64(d.Config.ConnectConcurrency) / (float64(h.P50) / 1e9)
		if bound < asked {
			s += fmt.Sprintf("; the client's %d rooms connecting at once allow about %s a second at the median connect time of %s: raise --connect-concurrency",
				d.Config.ConnectConcurrency, Sig3(bound), FormatNanos(h.P50))
		}
	}
	return s
}
