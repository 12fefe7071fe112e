package results

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Merge merges the shards of one run into one document. The shards must
// share a RunID and have distinct shard indexes (a single document without a
// Shard is returned as a copy). The result:
//
//   - Shard is nil and Shards is the number of shards merged;
//   - RunID, Label, Tool, CommandLine, Config, Environment, Step, Run come
//     from the shard with the lowest index (shards should record the whole
//     run in Config and their own rooms in Shard.Rooms);
//   - Counts (expected ones included), Connections (Peak too: the sum of
//     the shards' peaks is an upper bound of the run's peak, since shards
//     need not peak together), Failures (the example is the earliest one)
//     add up; histograms merge by name; timelines merge aligned on each
//     shard's TimedStart;
//   - Started and TimedStart are the earliest, Ended and TimedEnd the latest,
//     so ElapsedSeconds = latest TimedEnd − earliest TimedStart (to the
//     millisecond, as Mark measures), or the longest shard's elapsed time
//     when the shards lack timed-phase times; SetupSeconds is the longest;
//   - Score and Throughput are recomputed from the total and the merged
//     elapsed time with MarkScore (Score is 0 unless the merged run passed);
//   - Passed only if every shard passed and no shard is missing (a missing
//     shard is recorded as a FailShard failure); Interrupted and Discarded
//     if any shard was;
//   - Client: CPU seconds add, PeakRSSBytes is the largest shard's (the
//     peak of one process, not of the sum), CPU per message is recomputed;
//   - ServerInfo, Network, Retry and Search come from the lowest-index
//     shard that has them; Carried and ConnectRate add up;
//   - Server: all shards measured the same server, so its usage is taken
//     from the lowest-index shard that has it, with CPUPerMessageMicros
//     recomputed over the merged total (and its Engine from any shard
//     that has one when that shard has none);
//   - Integrity: counts add, MaxDisplacement is the largest, StrictOrder
//     if any;
//   - Storm: counts add, the recovery and the leaks are the largest;
//   - Paced: users and rates add, Broken if any; Churn: sequences and
//     leaks add (leaks: the largest), rates are recomputed, First merges.
func Merge(shards []*Document) (*Document, error) {
	if len(shards) == 0 {
		return nil, errors.New("merge: no documents")
	}
	for i, d := range shards {
		if d == nil {
			return nil, fmt.Errorf("merge: document %d is nil", i)
		}
	}
	if len(shards) == 1 && shards[0].Shard == nil {
		c := *shards[0]
		return &c, nil
	}
	id := shards[0].RunID
	count := 0
	seen := map[int]string{}
	for _, d := range shards {
		name := d.Source
		if name == "" {
			name = "run " + d.RunID
		}
		if d.RunID != id {
			return nil, fmt.Errorf("merge: %s has run id %q, not %q", name, d.RunID, id)
		}
		if d.Shard == nil {
			return nil, fmt.Errorf("merge: %s (run %s) is not a shard, but the run has %d documents", name, id, len(shards))
		}
		if count == 0 {
			count = d.Shard.Count
		}
		if d.Shard.Count != count {
			return nil, fmt.Errorf("merge: %s is shard %d of %d, but another shard of run %s says of %d", name, d.Shard.Index, d.Shard.Count, id, count)
		}
		if prev, dup := seen[d.Shard.Index]; dup {
			return nil, fmt.Errorf("merge: run %s has shard %d twice (%s and %s)", id, d.Shard.Index, prev, name)
		}
		seen[d.Shard.Index] = name
	}
	sorted := append([]*Document(nil), shards...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Shard.Index < sorted[j].Shard.Index })

	first := sorted[0]
	m := &Document{
		Schema:      SchemaVersion,
		RunID:       first.RunID,
		Shards:      len(sorted),
		Label:       first.Label,
		Tool:        first.Tool,
		CommandLine: first.CommandLine,
		Config:      first.Config,
		Environment: first.Environment,
		Step:        first.Step,
		Run:         first.Run,
		Passed:      true,
		Source:      first.Source,
	}
	overflow := false
	add := func(dst *int64, v int64) {
		r := *dst + v
		if (v > 0 && r < *dst) || (v < 0 && r > *dst) {
			overflow = true
		}
		*dst = r
	}
	var fs mergedFailures
	var timelines []TimelineAt
	latency := map[string][]*Histogram{}
	var latencyNames []string
	var churnFirst []*Histogram
	// TCP counters are a whole network namespace's: shards on one host
	// (--procs) see the same counters, shards on several hosts add up.
	tcpHosts := map[string]bool{}
	maxElapsed := 0.0
	for _, d := range sorted {
		m.Started = earliest(m.Started, d.Started)
		m.Ended = latest(m.Ended, d.Ended)
		m.TimedStart = earliest(m.TimedStart, d.TimedStart)
		m.TimedEnd = latest(m.TimedEnd, d.TimedEnd)
		m.SetupSeconds = max(m.SetupSeconds, d.SetupSeconds)
		maxElapsed = max(maxElapsed, d.ElapsedSeconds)
		m.Passed = m.Passed && d.Passed
		m.Interrupted = m.Interrupted || d.Interrupted
		m.Discarded = m.Discarded || d.Discarded

		add(&m.Counts.Sent, d.Counts.Sent)
		add(&m.Counts.Received, d.Counts.Received)
		add(&m.Counts.Total, d.Counts.Total)
		add(&m.Counts.ExpectedSent, d.Counts.ExpectedSent)
		add(&m.Counts.ExpectedTotal, d.Counts.ExpectedTotal)
		add(&m.Counts.Confirms, d.Counts.Confirms)

		add(&m.Connections.Attempted, d.Connections.Attempted)
		add(&m.Connections.Established, d.Connections.Established)
		add(&m.Connections.Peak, d.Connections.Peak)
		if c := d.Connections.Carried; c != nil {
			if m.Connections.Carried == nil {
				m.Connections.Carried = new(int64)
			}
			add(m.Connections.Carried, *c)
		}
		m.Connections.ConnectRate += d.Connections.ConnectRate

		for _, f := range d.Failures {
			fs.add(f)
		}
		for _, w := range d.Warnings {
			if !slices.Contains(m.Warnings, w) && len(m.Warnings) < MaxWarnings {
				m.Warnings = append(m.Warnings, w)
			}
		}
		if d.Timeline != nil {
			timelines = append(timelines, TimelineAt{Start: d.TimedStart, Timeline: d.Timeline})
		}
		for name, h := range d.Latency {
			if _, ok := latency[name]; !ok {
				latencyNames = append(latencyNames, name)
			}
			latency[name] = append(latency[name], h)
		}

		m.Client.CPUUserSeconds += d.Client.CPUUserSeconds
		m.Client.CPUSystemSeconds += d.Client.CPUSystemSeconds
		m.Client.PeakRSSBytes = max(m.Client.PeakRSSBytes, d.Client.PeakRSSBytes)
		if m.Server == nil && d.Server != nil {
			s := *d.Server
			m.Server = &s
		}
		if m.ServerInfo == nil && d.ServerInfo != nil {
			si := *d.ServerInfo
			m.ServerInfo = &si
		}
		if m.Network == nil && d.Network != nil {
			n := *d.Network
			m.Network = &n
		}
		if m.Retry == nil && d.Retry != nil {
			r := *d.Retry
			m.Retry = &r
		}
		if m.Search == nil && d.Search != nil {
			sr := *d.Search
			m.Search = &sr
		}
		if m.Server != nil && m.Server.Engine == "" && d.Server != nil {
			m.Server.Engine = d.Server.Engine
		}
		if t := d.TCP; t != nil && !tcpHosts[d.Environment.Hostname] {
			tcpHosts[d.Environment.Hostname] = true
			if m.TCP == nil {
				m.TCP = &TCPCounters{}
			}
			add(&m.TCP.SegmentsIn, t.SegmentsIn)
			add(&m.TCP.SegmentsOut, t.SegmentsOut)
			add(&m.TCP.Retransmitted, t.Retransmitted)
			add(&m.TCP.DelayedACKs, t.DelayedACKs)
			add(&m.TCP.LossProbes, t.LossProbes)
		}
		if d.Paced != nil {
			if m.Paced == nil {
				m.Paced = &Paced{}
			}
			add(&m.Paced.ConcurrentUsers, d.Paced.ConcurrentUsers)
			m.Paced.InPerSecond += d.Paced.InPerSecond
			m.Paced.OutPerSecond += d.Paced.OutPerSecond
			if d.Paced.Broken {
				m.Paced.Broken = true
				if m.Paced.Reason == "" {
					m.Paced.Reason = d.Paced.Reason
				}
			}
		}
		if g := d.Integrity; g != nil {
			if m.Integrity == nil {
				m.Integrity = &Integrity{}
			}
			mg := m.Integrity
			add(&mg.Lost, g.Lost)
			add(&mg.Duplicated, g.Duplicated)
			add(&mg.Corrupted, g.Corrupted)
			add(&mg.Reordered, g.Reordered)
			add(&mg.ReceiversReordered, g.ReceiversReordered)
			add(&mg.Receivers, g.Receivers)
			add(&mg.SenderReordered, g.SenderReordered)
			mg.MaxDisplacement = max(mg.MaxDisplacement, g.MaxDisplacement)
			mg.StrictOrder = mg.StrictOrder || g.StrictOrder
			if mg.FirstReordered == "" {
				mg.FirstReordered = g.FirstReordered
			}
			if o := g.Outside; o != nil {
				if mg.Outside == nil {
					mg.Outside = &Outside{}
				}
				add(&mg.Outside.Chats, o.Chats)
				add(&mg.Outside.Entered, o.Entered)
				add(&mg.Outside.Exited, o.Exited)
				add(&mg.Outside.Whispers, o.Whispers)
				add(&mg.Outside.Beeps, o.Beeps)
				add(&mg.Outside.PrivateEntered, o.PrivateEntered)
				add(&mg.Outside.PrivateExited, o.PrivateExited)
				add(&mg.Outside.PrivateChats, o.PrivateChats)
				add(&mg.Outside.Other, o.Other)
				if mg.Outside.FirstOther == "" {
					mg.Outside.FirstOther = o.FirstOther
				}
			}
			add(&mg.InFlight, g.InFlight)
		}
		if st := d.Storm; st != nil {
			if m.Storm == nil {
				m.Storm = &Storm{AtSeconds: st.AtSeconds}
			}
			ms := m.Storm
			add(&ms.Users, st.Users)
			add(&ms.Dropped, st.Dropped)
			add(&ms.Reconnected, st.Reconnected)
			add(&ms.Recovered, st.Recovered)
			add(&ms.Attempts, st.Attempts)
			add(&ms.MissedSends, st.MissedSends)
			ms.RecoverySeconds = max(ms.RecoverySeconds, st.RecoverySeconds)
			ms.LeakedConnections = max(ms.LeakedConnections, st.LeakedConnections)
			ms.LeakedGoroutines = max(ms.LeakedGoroutines, st.LeakedGoroutines)
			ms.LeakedFDs = max(ms.LeakedFDs, st.LeakedFDs)
		}
		if d.Churn != nil {
			if m.Churn == nil {
				m.Churn = &Churn{}
			}
			add(&m.Churn.Sequences, d.Churn.Sequences)
			m.Churn.LeakedConnections = max(m.Churn.LeakedConnections, d.Churn.LeakedConnections)
			m.Churn.LeakedGoroutines = max(m.Churn.LeakedGoroutines, d.Churn.LeakedGoroutines)
			m.Churn.LeakedFDs = max(m.Churn.LeakedFDs, d.Churn.LeakedFDs)
			if d.Churn.First != nil {
				churnFirst = append(churnFirst, d.Churn.First)
			}
		}
	}
	if overflow || fs.overflow {
		return nil, fmt.Errorf("merge run %s: counts overflow", id)
	}
	if missing := count - len(sorted); missing > 0 {
		// Name the first few missing shards; count may be large.
		var names []int
		for i := 0; i < count && len(names) < 10; i++ {
			if _, ok := seen[i]; !ok {
				names = append(names, i)
			}
		}
		list := fmt.Sprint(names)
		if missing > len(names) {
			list = strings.TrimSuffix(list, "]") + " ...]"
		}
		fs.add(Failure{Kind: FailShard, Count: int64(missing),
			Example: fmt.Sprintf("run %s: no document from %d shard(s) %s of %d", id, missing, list, count)})
		m.Passed = false
	}
	m.Failures = fs.list

	if !m.TimedStart.IsZero() && !m.TimedEnd.IsZero() && m.TimedEnd.After(m.TimedStart) {
		m.ElapsedSeconds = float64(m.TimedEnd.Sub(m.TimedStart).Milliseconds()) / 1000
	} else {
		m.ElapsedSeconds = maxElapsed
	}
	passed := m.Passed
	m.Derive()
	// A shard that did not pass failed or was interrupted, so Derive agrees;
	// a document that says otherwise is not trusted to pass.
	m.Passed = m.Passed && passed
	if !m.Passed {
		m.Score = 0
	}
	if m.Churn != nil && m.ElapsedSeconds > 0 {
		m.Churn.SequencesPerSecond = float64(m.Churn.Sequences) / m.ElapsedSeconds
	}

	if len(latencyNames) > 0 {
		m.Latency = make(map[string]*Histogram, len(latencyNames))
		for _, name := range latencyNames {
			h, err := MergeHistograms(latency[name]...)
			if err != nil {
				return nil, fmt.Errorf("merge run %s: latency %q: %w", id, name, err)
			}
			if h != nil {
				m.Latency[name] = h
			}
		}
	}
	if len(churnFirst) > 0 {
		h, err := MergeHistograms(churnFirst...)
		if err != nil {
			return nil, fmt.Errorf("merge run %s: churn first: %w", id, err)
		}
		m.Churn.First = h
	}
	if len(timelines) > 0 {
		m.Timeline, _ = MergeTimelines(timelines...)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("merge run %s: the merged document is invalid: %w", id, err)
	}
	return m, nil
}

type mergedFailures struct {
	list     []Failure
	index    map[string]int
	overflow bool
}

func (m *mergedFailures) add(f Failure) {
	if i, ok := m.index[f.Kind]; ok {
		g := &m.list[i]
		if f.Count > 0 && g.Count+f.Count < g.Count {
			m.overflow = true
		}
		g.Count += f.Count
		if !f.At.IsZero() && (g.At.IsZero() || f.At.Before(g.At)) {
			g.At, g.Example = f.At, f.Example
		}
		return
	}
	if m.index == nil {
		m.index = map[string]int{}
	}
	m.index[f.Kind] = len(m.list)
	m.list = append(m.list, f)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if a.IsZero() || b.After(a) {
		return b
	}
	return a
}

// GroupRuns groups documents by RunID, groups in the order in which their
// run first appears, documents within a group in input order.
func GroupRuns(docs []*Document) [][]*Document {
	var groups [][]*Document
	index := map[string]int{}
	for _, d := range docs {
		if d == nil {
			continue
		}
		i, ok := index[d.RunID]
		if !ok {
			i = len(groups)
			index[d.RunID] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	return groups
}

// MergeAll groups docs by run and merges each group (see Merge): a run of
// one unsharded document is passed through unchanged. A group that cannot
// be merged is left out and its error returned.
func MergeAll(docs []*Document) ([]*Document, []error) {
	var out []*Document
	var errs []error
	for _, g := range GroupRuns(docs) {
		if len(g) == 1 && g[0].Shard == nil {
			out = append(out, g[0])
			continue
		}
		m, err := Merge(g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	return out, errs
}
