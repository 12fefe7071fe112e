package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
)

// JSONLineVersion is the version of the line `volanogo load --json`
// prints. Its fields and their order are stable within a version; a new
// field may be added at the end of a version.
const JSONLineVersion = 1

// jsonLine is the one-line result of `volanogo load --json`, for harnesses
// (LKP, the Phoronix Test Suite, CI) that want a number and a verdict
// without reading result documents. Its figures are those of the last
// step that ran (the only one, unless -rooms is a list; steps has each):
//
//   - score: the Volano Report's score, the run rule over the counted
//     runs (the average of the best, rounded); 0 when there is none.
//   - msgs_per_sec: the mean unrounded throughput of the counted runs
//     that passed.
//   - server_cpu_per_msg_us, client_cpu_per_msg_us: the mean CPU time per
//     message of those runs, in microseconds; null when unknown (the
//     server's when neither --serve nor --server-metrics told it).
//   - failures: failures of every kind in every run, counted.
//   - verdict: pass, fail or interrupted; exit is the exit status of the
//     command (0, 1, 2 or 130).
type jsonLine struct {
	Volanogo          int        `json:"volanogo"`
	Verdict           string     `json:"verdict"`
	Exit              int        `json:"exit"`
	Score             int64      `json:"score"`
	MsgsPerSec        float64    `json:"msgs_per_sec"`
	ServerCPUPerMsgUs *float64   `json:"server_cpu_per_msg_us"`
	ClientCPUPerMsgUs *float64   `json:"client_cpu_per_msg_us"`
	Failures          int64      `json:"failures"`
	Runs              int        `json:"runs"`
	Passed            int        `json:"passed"`
	Rooms             int        `json:"rooms"`
	Users             int        `json:"users"`
	Count             int        `json:"count"`
	RunID             string     `json:"run_id"`
	Steps             []jsonStep `json:"steps"`
}

// jsonStep is one step of the campaign in the line.
type jsonStep struct {
	Rooms             int      `json:"rooms"`
	CPUs              int      `json:"cpus,omitempty"`
	Score             int64    `json:"score"`
	MsgsPerSec        float64  `json:"msgs_per_sec"`
	ServerCPUPerMsgUs *float64 `json:"server_cpu_per_msg_us"`
	ClientCPUPerMsgUs *float64 `json:"client_cpu_per_msg_us"`
	Passed            bool     `json:"passed"`
}

// newJSONLine sums up a campaign: its result (nil when it could not run)
// and the error the command returns (its exit status).
func newJSONLine(cfg campaign.Config, res *campaign.Result, cmdErr error) jsonLine {
	l := jsonLine{Volanogo: JSONLineVersion, Users: cfg.Spec.Users, Count: cfg.Spec.Count, Steps: []jsonStep{}}
	l.Exit = exitStatus(cmdErr)
	switch l.Exit {
	case 0:
		l.Verdict = "pass"
	case exitInterrupted:
		l.Verdict = "interrupted"
	default:
		l.Verdict = "fail"
	}
	if len(cfg.Steps) > 0 {
		l.Rooms = cfg.Steps[len(cfg.Steps)-1]
	}
	if res == nil {
		return l
	}
	for _, s := range res.Steps {
		st := jsonStep{Rooms: s.Rooms, CPUs: s.CPUs, Passed: s.Passed}
		if s.Tally.HasScore() {
			st.Score = s.Tally.Score
		}
		var n int
		var tput, server, client float64
		var nServer, nClient int
		for _, d := range s.Docs {
			l.Runs++
			for _, f := range d.Failures {
				l.Failures += f.Count
			}
			if results.RunPassed(d) {
				l.Passed++
			}
			if d.Discarded || !results.RunPassed(d) {
				continue
			}
			n++
			tput += d.Throughput
			if d.Server != nil && d.Server.CPUPerMessageMicros > 0 {
				server += d.Server.CPUPerMessageMicros
				nServer++
			}
			if d.Client.CPUPerMessageMicros > 0 {
				client += d.Client.CPUPerMessageMicros
				nClient++
			}
			if l.RunID == "" {
				l.RunID = d.RunID
			}
		}
		if n > 0 {
			st.MsgsPerSec = round3(tput / float64(n))
		}
		st.ServerCPUPerMsgUs = mean(server, nServer)
		st.ClientCPUPerMsgUs = mean(client, nClient)
		l.Steps = append(l.Steps, st)
	}
	if len(l.Steps) > 0 {
		last := l.Steps[len(l.Steps)-1]
		l.Rooms, l.Score, l.MsgsPerSec = last.Rooms, last.Score, last.MsgsPerSec
		l.ServerCPUPerMsgUs, l.ClientCPUPerMsgUs = last.ServerCPUPerMsgUs, last.ClientCPUPerMsgUs
	}
	return l
}

func mean(sum float64, n int) *float64 {
	if n == 0 {
		return nil
	}
	m := round3(sum / float64(n))
	return &m
}

// round3 keeps three decimals: the figures' noise is far above that.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// exitStatus is the status the command's error gives the process.
func exitStatus(err error) int {
	var ue *UsageError
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}

// writeJSONLine writes the line: one JSON object on one line, with a space
// after each colon and comma so that tools that split lines on spaces
// (the Phoronix Test Suite's result parser) find each value as one word.
func writeJSONLine(w io.Writer, l jsonLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = w.Write(append(spaced(b), '\n'))
	return err
}

// spaced puts a space after every colon and comma of compact JSON that
// separates keys, values and elements (not those inside strings).
func spaced(compact []byte) []byte {
	var out bytes.Buffer
	inString, escaped := false, false
	for _, c := range compact {
		out.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ':' || c == ','):
			out.WriteByte(' ')
		}
	}
	return out.Bytes()
}
