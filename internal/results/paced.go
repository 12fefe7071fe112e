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
			reasons = append(reasons, "connections refused ("+Describe(f.Kind)+": "+f.Example+")")
		case FailReset, FailClosed:
			reasons = append(reasons, "connections dropped ("+Describe(f.Kind)+": "+f.Example+")")
		case FailLost:
			reasons = append(reasons, fmt.Sprintf("%d messages lost", f.Count))
		case FailStall:
			reasons = append(reasons, "stalled: "+f.Example)
		default:
			reasons = append(reasons, Describe(f.Kind)+": "+f.Example)
		}
	}
	if d.Interrupted {
		reasons = append(reasons, "interrupted")
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
