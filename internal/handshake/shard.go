package handshake

import (
	"fmt"
	"strings"
	"time"
)

// The shard protocol: the lines between `volanogo load` and a shard
// process it starts (the hidden command `volanogo shard`), one per line,
// each ending in a newline.
//
// The parent writes the shard's spec (JSON) as the first line of the
// shard's standard input. The shard sets up its connections and writes
// ShardReady on its standard output; when every shard is ready the parent
// writes one Start line to all of them; each shard starts its timed phase
// at that time, writes Progress lines while it runs (about one a second),
// ShardEnded when its timed phase is over, and its result document last
// (Document). The end of the shard's input before the Start line calls the
// shard's run off (another shard failed); after it, the parent is gone and
// the shard stops.
const (
	ShardReady = "volanogo shard: ready"
	ShardEnded = "volanogo shard: ended"

	progressPrefix = "volanogo shard: progress "
	documentPrefix = "volanogo shard: document "
	startPrefix    = "start "
)

// ShardLine is a line a shard writes, as the parent reads it.
type ShardLine int

const (
	LineOther ShardLine = iota // anything else (the parent keeps it for error messages)
	LineReady
	LineEnded
	LineProgress // Payload is a JSON snapshot of the shard's progress
	LineDocument // Payload is the shard's result document (JSON)
)

// Progress is the line that carries a shard's progress (JSON, one line).
func Progress(payload []byte) string { return progressPrefix + string(payload) }

// Document is the line that carries a shard's result document (JSON, one
// line).
func Document(payload []byte) string { return documentPrefix + string(payload) }

// ParseShardLine sorts a line a shard wrote; payload is the JSON of a
// Progress or Document line.
func ParseShardLine(line string) (kind ShardLine, payload string) {
	switch {
	case line == ShardReady:
		return LineReady, ""
	case line == ShardEnded:
		return LineEnded, ""
	case strings.HasPrefix(line, progressPrefix):
		return LineProgress, line[len(progressPrefix):]
	case strings.HasPrefix(line, documentPrefix):
		return LineDocument, line[len(documentPrefix):]
	}
	return LineOther, line
}

// Start is the line by which the parent starts every shard's timed phase
// at t.
func Start(t time.Time) string { return startPrefix + t.UTC().Format(time.RFC3339Nano) }

// ParseStart reads a Start line.
func ParseStart(line string) (time.Time, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(line), startPrefix)
	if !ok {
		return time.Time{}, fmt.Errorf("bad start signal %q", line)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad start signal %q: %w", line, err)
	}
	return t, nil
}
