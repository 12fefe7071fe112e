package server

import (
	"os"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil/leak"
)

// TestMain runs the child server of the Mark tests (startChild) when asked,
// and otherwise the tests, failing the run if they leave goroutines behind
// (the runtime's and the fuzzing engine's own are not counted: see package
// leak).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(leak.Main(m))
}
