// Package handshake defines, once each, the lines by which volanogo's
// processes tell each other where they are and when to start.
//
// A `volanogo serve` prints one line on its standard output once every
// listener is open (Serve), so that a parent that started it on ports
// chosen by the kernel (`volanogo load --serve`) learns them. A shard
// process of `volanogo load --procs` and its parent speak the shard
// protocol (shard.go): the spec in, ready, a common start, progress, the
// end of the timed phase and the result document out.
package handshake

import "strings"

// servePrefix starts the line of Serve.
const servePrefix = "volanogo serve listening:"

// Serve is where a `volanogo serve` listens: its chat, WebSocket and
// metrics addresses (host:port), empty for a listener that is off. Its
// line reads
//
//	volanogo serve listening: chat=127.0.0.1:8000 ws= metrics=127.0.0.1:8002
type Serve struct {
	Chat, WS, Metrics string
}

// Line is s as `volanogo serve` prints it (without the newline).
func (s Serve) Line() string {
	return servePrefix + " chat=" + s.Chat + " ws=" + s.WS + " metrics=" + s.Metrics
}

// ParseServe reads a line printed by `volanogo serve`; ok is false for any
// other line.
func ParseServe(line string) (s Serve, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), servePrefix)
	if !ok {
		return Serve{}, false
	}
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "chat":
			s.Chat = v
		case "ws":
			s.WS = v
		case "metrics":
			s.Metrics = v
		}
	}
	return s, true
}
