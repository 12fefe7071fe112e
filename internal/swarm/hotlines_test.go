package swarm

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestHotLines checks the layout that keeps a user's per-packet state on
// few cache lines: the user's hot fields (up to its ledger's maxK) on its
// first two lines and the link's on its first, both objects aligned to
// lines by the allocator (a size class of a multiple of 64 bytes: any
// size past 480, or 192).
func TestHotLines(t *testing.T) {
	var u user
	assert.Greater(t, unsafe.Sizeof(u), uintptr(480), "user: past 480 bytes, a line-aligned size class")
	assert.LessOrEqual(t, unsafe.Offsetof(u.ledger)+unsafe.Offsetof(u.ledger.maxK)+8, uintptr(128), "user: hot fields on two lines")
	assert.Equal(t, uintptr(192), unsafe.Sizeof(link{}), "link: a line-aligned size class")
	var l link
	assert.LessOrEqual(t, unsafe.Offsetof(l.writeTimeout)+8, uintptr(64), "link: hot fields on one line")
}
