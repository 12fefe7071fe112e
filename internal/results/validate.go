package results

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Bounds that Validate enforces, so that a reader's work on a document is
// bounded too.
const (
	// MaxHistograms bounds Document.Latency.
	MaxHistograms = 64
	// MaxFailures bounds Document.Failures (a FailureSet keeps at most
	// MaxFailureKinds+1).
	MaxFailures = 1024
	// MaxWarnings bounds Document.Warnings.
	MaxWarnings = 64
)

// Validate checks what a reader relies on: a known schema, a run id,
// non-negative counts, times and resource figures, Total = Sent + Received,
// a consistent shard, timeline and failure list, and histograms that decode
// and agree with their Count. Read calls it on every document and Write on
// every document it writes.
func (d *Document) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	nonNeg := func(name string, v int64) {
		if v < 0 {
			bad("%s is negative (%d)", name, v)
		}
	}
	nonNegF := func(name string, v float64) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s is %v", name, v)
		}
	}
	if d.Schema < 1 || d.Schema > SchemaVersion {
		bad("schema %d (this build reads 1 to %d)", d.Schema, SchemaVersion)
	}
	if strings.TrimSpace(d.RunID) == "" {
		bad("no run_id")
	}
	if s := d.Shard; s != nil {
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			bad("shard %d of %d", s.Index, s.Count)
		}
	}
	nonNeg("shards", int64(d.Shards))
	nonNeg("step", int64(d.Step))
	nonNeg("run", int64(d.Run))
	nonNeg("config.rooms", int64(d.Config.Rooms))
	nonNeg("config.users", int64(d.Config.Users))
	nonNeg("config.count", int64(d.Config.Count))
	nonNegF("setup_seconds", d.SetupSeconds)
	nonNegF("elapsed_seconds", d.ElapsedSeconds)

	c := d.Counts
	nonNeg("counts.sent", c.Sent)
	nonNeg("counts.received", c.Received)
	nonNeg("counts.total", c.Total)
	nonNeg("counts.expected_sent", c.ExpectedSent)
	nonNeg("counts.expected_total", c.ExpectedTotal)
	nonNeg("counts.confirms", c.Confirms)
	if c.Sent >= 0 && c.Received >= 0 && c.Total != c.Sent+c.Received {
		bad("counts.total %d is not sent %d + received %d", c.Total, c.Sent, c.Received)
	}
	nonNeg("score", d.Score)
	nonNegF("throughput", d.Throughput)

	if len(d.Latency) > MaxHistograms {
		bad("%d latency histograms (at most %d)", len(d.Latency), MaxHistograms)
	}
	for name, h := range d.Latency {
		if len(errs) > 20 {
			break
		}
		if name == "" {
			bad("latency histogram with an empty name")
		}
		if err := h.validate(); err != nil {
			bad("latency %q: %v", name, err)
		}
	}
	if d.Timeline != nil {
		if err := d.Timeline.validate(); err != nil {
			bad("timeline: %v", err)
		}
	}
	nonNeg("connections.attempted", d.Connections.Attempted)
	nonNeg("connections.established", d.Connections.Established)
	nonNeg("connections.peak", d.Connections.Peak)
	if len(d.Failures) > MaxFailures {
		bad("%d failures (at most %d kinds)", len(d.Failures), MaxFailures)
	}
	for i, f := range d.Failures {
		if len(errs) > 20 {
			break
		}
		if f.Kind == "" {
			bad("failures[%d] has no kind", i)
		}
		nonNeg(fmt.Sprintf("failures[%d].count", i), f.Count)
	}
	if len(d.Warnings) > MaxWarnings {
		bad("%d warnings (at most %d)", len(d.Warnings), MaxWarnings)
	}
	nonNegF("client.cpu_user_seconds", d.Client.CPUUserSeconds)
	nonNegF("client.cpu_system_seconds", d.Client.CPUSystemSeconds)
	nonNeg("client.peak_rss_bytes", d.Client.PeakRSSBytes)
	nonNegF("client.cpu_per_message_us", d.Client.CPUPerMessageMicros)
	if t := d.TCP; t != nil {
		nonNeg("tcp.segments_in", t.SegmentsIn)
		nonNeg("tcp.segments_out", t.SegmentsOut)
		nonNeg("tcp.retransmitted", t.Retransmitted)
		nonNeg("tcp.delayed_acks", t.DelayedACKs)
		nonNeg("tcp.loss_probes", t.LossProbes)
	}
	if s := d.Server; s != nil {
		nonNegF("server.cpu_seconds", s.CPUSeconds)
		nonNegF("server.cpu_percent", s.CPUPercent)
		nonNeg("server.rss_start_bytes", s.RSSStartBytes)
		nonNeg("server.rss_end_bytes", s.RSSEndBytes)
	}
	if g := d.Integrity; g != nil {
		nonNeg("integrity.lost", g.Lost)
		nonNeg("integrity.duplicated", g.Duplicated)
		nonNeg("integrity.corrupted", g.Corrupted)
		nonNeg("integrity.reordered", g.Reordered)
		nonNeg("integrity.max_displacement", g.MaxDisplacement)
		nonNeg("integrity.receivers", g.Receivers)
		nonNeg("integrity.sender_reordered", g.SenderReordered)
		if g.ReceiversReordered < 0 || g.ReceiversReordered > max(g.Receivers, 0) {
			bad("integrity.receivers_reordered %d is not between 0 and receivers %d", g.ReceiversReordered, g.Receivers)
		}
		if o := g.Outside; o != nil {
			nonNeg("integrity.outside.chats", o.Chats)
			nonNeg("integrity.outside.entered", o.Entered)
			nonNeg("integrity.outside.exited", o.Exited)
			nonNeg("integrity.outside.whispers", o.Whispers)
			nonNeg("integrity.outside.beeps", o.Beeps)
			nonNeg("integrity.outside.private_entered", o.PrivateEntered)
			nonNeg("integrity.outside.private_exited", o.PrivateExited)
			nonNeg("integrity.outside.private_chats", o.PrivateChats)
			nonNeg("integrity.outside.other", o.Other)
		}
		nonNeg("integrity.in_flight", g.InFlight)
	}
	if p := d.Paced; p != nil {
		nonNeg("paced.concurrent_users", p.ConcurrentUsers)
		nonNegF("paced.in_per_second", p.InPerSecond)
		nonNegF("paced.out_per_second", p.OutPerSecond)
	}
	if st := d.Storm; st != nil {
		nonNegF("storm.at_seconds", st.AtSeconds)
		nonNeg("storm.users", st.Users)
		nonNeg("storm.dropped", st.Dropped)
		nonNeg("storm.reconnected", st.Reconnected)
		nonNeg("storm.recovered", st.Recovered)
		nonNeg("storm.attempts", st.Attempts)
		nonNegF("storm.recovery_seconds", st.RecoverySeconds)
		nonNeg("storm.missed_sends", st.MissedSends)
		if st.Reconnected > st.Dropped || st.Recovered > st.Reconnected {
			bad("storm: %d recovered and %d reconnected of %d dropped", st.Recovered, st.Reconnected, st.Dropped)
		}
	}
	if ch := d.Churn; ch != nil {
		nonNeg("churn.sequences", ch.Sequences)
		nonNegF("churn.sequences_per_second", ch.SequencesPerSecond)
		if ch.First != nil {
			if err := ch.First.validate(); err != nil {
				bad("churn.first: %v", err)
			}
		}
	}
	return errors.Join(errs...)
}

func (h *Histogram) validate() error {
	if h == nil {
		return errors.New("null histogram")
	}
	if h.Count < 0 {
		return fmt.Errorf("count is negative (%d)", h.Count)
	}
	if h.HDR == "" {
		if h.Count != 0 {
			return fmt.Errorf("no hdr encoding for %d values", h.Count)
		}
		return nil
	}
	hh, err := h.Decode()
	if err != nil {
		return err
	}
	if hh.TotalCount() != h.Count {
		return fmt.Errorf("count %d but the hdr encoding holds %d", h.Count, hh.TotalCount())
	}
	return nil
}

func (t *Timeline) validate() error {
	if !(t.IntervalSeconds >= 0.001 && t.IntervalSeconds <= 1e9) {
		return fmt.Errorf("interval_seconds is %v", t.IntervalSeconds)
	}
	if len(t.Sent) != len(t.Received) {
		return fmt.Errorf("%d sent points but %d received", len(t.Sent), len(t.Received))
	}
	if len(t.Sent) > MaxTimelinePoints {
		return fmt.Errorf("%d points (at most %d)", len(t.Sent), MaxTimelinePoints)
	}
	for i := range t.Sent {
		if t.Sent[i] < 0 || t.Received[i] < 0 {
			return fmt.Errorf("point %d is negative", i)
		}
	}
	return nil
}
