package kubernetes

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/cli"
)

// TestArgsAreVolanogoFlags parses the arguments of every volanogo
// container with volanogo's own command tree, so that a misspelt or
// removed flag fails here rather than in a cluster.
func TestArgsAreVolanogoFlags(t *testing.T) {
	vars := map[string]string{"JOB_COMPLETION_INDEX": "3", "RUN_ID": "1795296164", "START_AT": "2026-11-21T22:00:00Z"}
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	checked := 0
	for _, o := range loadManifests(t) {
		spec := podSpec(o.obj)
		if spec == nil {
			continue
		}
		for _, c := range spec.Containers {
			if len(c.Args) == 0 || len(c.Command) > 0 {
				continue // not the volanogo image's entrypoint
			}
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				args[i] = ref.ReplaceAllStringFunc(a, func(m string) string {
					v, ok := vars[ref.FindStringSubmatch(m)[1]]
					require.True(t, ok, "%s: %s: unknown variable in %q", o.source, c.Name, a)
					return v
				})
			}
			var out, errb bytes.Buffer
			root := cli.NewRoot(&cli.IO{Out: &out, Err: &errb})
			cmd, rest, err := root.Find(args)
			require.NoError(t, err, "%s: %s: %v", o.source, c.Name, args)
			require.NotEqual(t, root, cmd, "%s: %s: no volanogo command in %v", o.source, c.Name, args)
			assert.NoError(t, cmd.ParseFlags(rest), "%s: %s: %v", o.source, c.Name, args)
			checked++
		}
	}
	assert.GreaterOrEqual(t, checked, 2, "the server and the swarm")
}
