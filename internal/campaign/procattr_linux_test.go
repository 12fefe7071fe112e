package campaign

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProcsChildAttr: every child has its own process group and dies
// with its parent.
func TestProcsChildAttr(t *testing.T) {
	a := childAttr()
	assert.True(t, a.Setpgid, "a process group of its own: the terminal's SIGINT reaches the campaign only")
	assert.NotZero(t, a.Pdeathsig, "killed with its parent")
}
