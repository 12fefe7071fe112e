package results

import (
	"strings"
	"time"
)

// ServerMemoryPerConnection is what each of the run's connections cost
// the server in resident memory, in bytes: its RSS growth from before the
// run's set-up (Server.RSSBeforeBytes) to the larger of its RSS at the
// start and at the end of the timed phase, over the most connections the
// run held at once (Connections.Peak). ok is false when the server's RSS
// before the run is unknown, the run held no connection, or the server's
// RSS did not grow.
func (d *Document) ServerMemoryPerConnection() (bytes float64, ok bool) {
	s := d.Server
	if s == nil || s.RSSBeforeBytes <= 0 || d.Connections.Peak <= 0 {
		return 0, false
	}
	growth := max(s.RSSStartBytes, s.RSSEndBytes) - s.RSSBeforeBytes
	if growth <= 0 {
		return 0, false
	}
	return float64(growth) / float64(d.Connections.Peak), true
}

// ServerEngine is the engine the server said it serves its connections
// with: from its usage over the timed phase, else from its identity (a
// failed run has no usage, but the server said its engine before it);
// "" when unknown.
func (d *Document) ServerEngine() string {
	if d.Server != nil && d.Server.Engine != "" {
		return d.Server.Engine
	}
	if d.ServerInfo != nil {
		return d.ServerInfo.Engine
	}
	return ""
}

// Engines says what served and what loaded a run: "serve epoll / load
// goroutine" (the server's engine as it said it, Server.Engine, and the
// client's, Config.ClientEngine), either part left out when unknown, ""
// when both are (older documents, another server with an external
// client). A server's coalescing window is part of its engine ("serve
// epoll --coalesce 250µs"): it changes what a run measures, so that runs
// with and without one are told apart (as platforms in a report).
func (d *Document) Engines() string {
	var parts []string
	if e := d.ServerEngine(); e != "" {
		e = "serve " + e
		if d.Server != nil && d.Server.CoalesceSeconds > 0 {
			e += " --coalesce " + time.Duration(d.Server.CoalesceSeconds*float64(time.Second)).String()
		}
		parts = append(parts, e)
	}
	if d.Config.ClientEngine != "" {
		parts = append(parts, "load "+d.Config.ClientEngine)
	}
	return strings.Join(parts, " / ")
}
