// Package results is the result document of volanogo: the one file that
// `volanogo load` writes per run (or per shard of a run) and that
// `volanogo report` reads. The two commands share nothing else, so this
// comment is the format's specification, written for anyone who wants to
// read the files with their own tools.
//
// # The document
//
// A result document is one JSON object (UTF-8, indented, a final newline),
// usually named
//
//	volanogo-<label>-r<rooms>-run<k>-<runid>[-shard<i>of<n>].json
//
// It is small whatever the run's size (tens of KB; a reader may refuse
// anything over MaxDocumentBytes): latency lives in mergeable HDR histograms,
// throughput in a timeline of at most MaxTimelinePoints points, failures as
// counted kinds with one example each, never one line per message or
// connection.
//
// Units: durations are seconds (float, fields ending in _seconds) or
// nanoseconds (integer, histogram fields ending in _ns); CPU per message is
// microseconds (_us); memory is bytes (_bytes); times are RFC 3339 with
// nanoseconds, as Go's time.Time marshals them; counts are integers.
// Optional fields may be absent; an absent number means 0, an absent object
// means "not measured" or "not applicable".
//
// Top-level fields (the Go field of each is in Document):
//
//	schema            int     format version, 1 to SchemaVersion (see below)
//	run_id            string  the run; all shards of a run share it; never empty
//	shard             object  present in a shard's document: index (0-based),
//	                          count, start_at (agreed start of the timed phase),
//	                          clock_offset_seconds (how late the shard began),
//	                          rooms (the room numbers it ran)
//	shards            int     in a merged document, how many shards it merges
//	label             string  the platform under test; report's rows
//	tool              object  name ("volanogo"), version, commit, go_version
//	command_line      [str]   the client's argv, program name included
//	config            object  the run as configured: scenario ("turns",
//	                          "paced", "churn"), transport ("tcp", "ws"), host,
//	                          port, url, start (first room), rooms, users,
//	                          count (messages per user, 0 = no limit),
//	                          pause_seconds (0 = turn-taking),
//	                          duration_seconds, connect_rate (per second),
//	                          connect_concurrency, stall_timeout_seconds,
//	                          slo_seconds, bind (source addresses),
//	                          server_cpus, server_command
//	environment       object  the client machine: hostname, os, arch, kernel,
//	                          distribution, cpu_model, cpus (logical), memory_bytes,
//	                          go_version, gomaxprocs, open_files_soft,
//	                          open_files_hard, ephemeral_ports ("32768 60999"),
//	                          floor (load --floor: the machine's kernel floor,
//	                          a list of Floor, one per room count measured)
//	step, run         int     place in a sweep: rooms of the step, 1-based run
//	discarded         bool    excluded by the run rules (the first run)
//	started, ended    time    the whole run, connection set-up included
//	timed_start, timed_end time  the timed (chat) phase
//	setup_seconds     float   untimed connection set-up
//	elapsed_seconds   float   the timed phase, millisecond resolution, as Mark
//	passed            bool    no failure of any kind
//	interrupted       bool    stopped before its end (SIGINT)
//	counts            object  sent, received, total (= sent + received: Mark's
//	                          count), expected_sent, expected_total (0 when
//	                          open-ended), confirms (not in total)
//	score             int     Mark's "Average throughput": MarkScore(total,
//	                          elapsed ms); 0 when failed or under 1 second
//	throughput        float   total / elapsed_seconds, unrounded, failed or not
//	latency           map     name → histogram: "delivery",
//	                          "delivery_scheduled", "turn", "connect",
//	                          "sequence" (see the Latency* constants)
//	timeline          object  interval_seconds (1, 2, 4, ...), sent[i] and
//	                          received[i]: messages in interval i of the timed
//	                          phase (the last interval may be partial)
//	connections       object  attempted, established, peak (most open at once)
//	failures          [obj]   kind (the Fail* constants), count, example (the
//	                          first one's text), at (when it happened)
//	client            object  load process over the timed phase:
//	                          cpu_user_seconds, cpu_system_seconds,
//	                          peak_rss_bytes, cpu_per_message_us
//	server            object  when known: source ("metrics" or "proc"),
//	                          cpu_seconds, cpu_percent (100 = one processor),
//	                          rss_start_bytes, rss_end_bytes,
//	                          cpu_per_message_us, cpus, gomaxprocs, and after
//	                          the run open_connections, goroutines, open_fds
//	paced             object  open-loop runs: concurrent_users, in_per_second,
//	                          out_per_second, broken, reason
//	churn             object  churn runs: sequences, sequences_per_second,
//	                          first (histogram of each user's first sequence),
//	                          leaked_connections, leaked_goroutines, leaked_fds
//
// A histogram is an object with "hdr", the HdrHistogram V2 compressed
// encoding in base64 (as written by HdrHistogram's encodeIntoCompressedByteBuffer
// in Java and Histogram.Encode in hdrhistogram-go; values are nanoseconds),
// and a summary for readers without an HDR library: count, min_ns, max_ns,
// mean_ns, p50_ns, p90_ns, p99_ns, p999_ns. Percentiles are HDR's (within
// 0.1% of the value at 3 significant figures). Histograms of shards merge
// exactly; summaries do not, so merge the "hdr" fields and summarise again.
//
// # Versions
//
// "schema" is the format's version. Within a version, fields may be added
// but none is removed, renamed or given a new meaning: a reader ignores
// fields it does not know. A change of meaning makes a new version, and a
// reader accepts every version from 1 to the highest it knows and rejects a
// higher one (ErrUnknownSchema) rather than guess. This build writes and
// reads SchemaVersion.
//
// # Reading and writing
//
// WriteFile writes atomically (temporary file, fsync, rename) and OutputPath
// names the file. Read, ReadFile and ReadPaths validate what they read (see
// Document.Validate), so that a reader can trust counts, histograms and
// timelines; errors name the input and fall in categories testable with
// errors.Is: ErrNotDocument, ErrInvalid, ErrUnknownSchema, ErrTruncated.
// Validation also bounds a reader's work: at most MaxDocumentBytes,
// MaxHistograms latency histograms (each at most 16 MiB decoded),
// MaxFailures failure kinds and MaxTimelinePoints timeline points.
//
// Shards of one run (same run_id, distinct shard.index) merge with Merge or
// MergeAll: counts add, histograms merge, the elapsed time spans the union
// of the shards' timed phases, and the score is recomputed by Mark's rule
// (MarkScore).
//
// During a run, NewHistogram, TimelineRecorder and FailureSet collect what
// the document holds, in bounded memory and safely from many goroutines
// (histograms: one per goroutine, merged at the end); Classify names the
// failure kind of a network error and Describe phrases it for a footnote.
//
// # Example
//
// A passed run of 15 rooms (some optional fields left out):
//
//	{
//	  "schema": 1,
//	  "run_id": "5f0c2a9e41d3b7a8",
//	  "label": "volanogo serve, go1.26",
//	  "tool": {"name": "volanogo", "version": "v0.1.0", "go_version": "go1.26.0"},
//	  "command_line": ["volanogo", "load", "-rooms", "15"],
//	  "config": {"scenario": "turns", "transport": "tcp", "host": "localhost",
//	    "port": 8000, "start": 1, "rooms": 15, "users": 20, "count": 100,
//	    "pause_seconds": 0, "stall_timeout_seconds": 30},
//	  "environment": {"hostname": "bench1", "os": "linux", "arch": "amd64",
//	    "kernel": "6.12.48", "cpu_model": "AMD EPYC 7B13", "cpus": 2,
//	    "memory_bytes": 8341004288, "go_version": "go1.26.0", "gomaxprocs": 2,
//	    "open_files_soft": 20000, "open_files_hard": 20000},
//	  "step": 15,
//	  "run": 2,
//	  "started": "2026-11-21T21:00:00Z",
//	  "ended": "2026-11-21T21:00:04Z",
//	  "timed_start": "2026-11-21T21:00:01.5Z",
//	  "timed_end": "2026-11-21T21:00:03.712Z",
//	  "setup_seconds": 1.5,
//	  "elapsed_seconds": 2.212,
//	  "passed": true,
//	  "counts": {"sent": 30000, "received": 570000, "total": 600000,
//	    "expected_sent": 30000, "expected_total": 600000, "confirms": 30000},
//	  "score": 271248,
//	  "throughput": 271247.73960216995,
//	  "latency": {
//	    "delivery": {
//	      "hdr": "HISTFAAAAE942pJpmSzMwMCgxgABzFCakYGB2c1gxwIG+w8QgYV5DZf5drMtuCjZybbgPf9stgMr2bvZHlxhPsyx4RXjUd4Vbjv5XrADAgAA//9RFRWO",
//	      "count": 570000, "min_ns": 61984, "max_ns": 910335,
//	      "mean_ns": 105627.39649122808, "p50_ns": 85055, "p90_ns": 140031,
//	      "p99_ns": 260095, "p999_ns": 480255
//	    }
//	  },
//	  "timeline": {"interval_seconds": 1, "sent": [13420, 13610, 2970],
//	    "received": [254980, 258590, 56430]},
//	  "connections": {"attempted": 300, "established": 300, "peak": 300},
//	  "client": {"cpu_user_seconds": 1.1, "cpu_system_seconds": 0.9,
//	    "peak_rss_bytes": 41943040, "cpu_per_message_us": 3.33},
//	  "server": {"source": "metrics", "cpu_seconds": 2.05, "cpu_percent": 92.7,
//	    "rss_start_bytes": 12582912, "rss_end_bytes": 18874368,
//	    "cpu_per_message_us": 3.42}
//	}
package results
