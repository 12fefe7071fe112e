package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

func docsOf(lines ...string) []*results.Document {
	var docs []*results.Document
	for _, l := range lines {
		docs = append(docs, &results.Document{CommandLine: strings.Fields(l)})
	}
	return docs
}

func TestCollapseCommandsSweep(t *testing.T) {
	got := collapseCommands(docsOf(
		"volanogo load -rooms 15 -runs 3",
		"volanogo load -rooms 30 -runs 3",
		"volanogo load -rooms 15 -runs 3", // a repeat is one line
		"volanogo load -rooms 45 -runs 3",
	))
	require.Len(t, got, 1)
	assert.Equal(t, "volanogo load -rooms N -runs 3", got[0].Command)
	assert.Equal(t, "N = 15, 30, 45", got[0].Values())
}

func TestCollapseCommandsScript(t *testing.T) {
	// bench/engines.sh: per run, the rooms, the count, the run ID and the
	// output change together.
	var lines []string
	for r := 1; r <= 3; r++ {
		for _, s := range []string{"15 200", "475 40"} {
			rooms, count, _ := strings.Cut(s, " ")
			id := "r" + string(rune('0'+r)) + "-" + rooms
			lines = append(lines, "volanogo load -rooms "+rooms+" -count "+count+" --run-id "+id+" --json -o /tmp/x/"+id+".json")
		}
	}
	lines = append(lines, "volanogo load -rooms 15 --procs=2 --run-id a", "volanogo load -rooms 15 --procs=3 --run-id b")
	lines = append(lines, "volanogo load -rooms 15 -quiet", "volanogo load -rooms 15 -verbose")
	got := collapseCommands(docsOf(lines...))
	require.Len(t, got, 4)
	assert.Equal(t, "volanogo load -rooms ROOMS -count COUNT --run-id RUN-ID --json -o O", got[0].Command)
	require.Len(t, got[0].Vars, 4)
	assert.Equal(t, []string{"15", "475", "15", "475", "15", "475"}, got[0].Vars[0].Values)
	assert.Equal(t, "ROOMS = 15, 475; COUNT = 200, 40; RUN-ID = r1-15, …, r3-475 (6 values); O = /tmp/x/r1-15.json, …, /tmp/x/r3-475.json (6 values)", got[0].Values())
	assert.Equal(t, "volanogo load -rooms 15 --procs=PROCS --run-id RUN-ID", got[1].Command)
	assert.Equal(t, "PROCS = 2, 3; RUN-ID = a, b", got[1].Values())
	// Lines that differ in a flag stay apart.
	assert.Equal(t, "volanogo load -rooms 15 -quiet", got[2].Text())
	assert.Equal(t, "volanogo load -rooms 15 -verbose", got[3].Text())
}

func TestCollapseCommandsTooManyVars(t *testing.T) {
	got := collapseCommands(docsOf(
		"volanogo load a b c d e",
		"volanogo load v w x y z",
	))
	require.Len(t, got, 2)
	assert.Empty(t, got[0].Values())
}

func TestCollapseCommandsFlagValue(t *testing.T) {
	got := collapseCommands(docsOf(
		"volanogo load --rooms=15",
		"volanogo load --rooms=30",
	))
	require.Len(t, got, 1)
	assert.Equal(t, "volanogo load --rooms=N   (N = 15, 30)", got[0].Text())
}
