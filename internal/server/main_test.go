package server

import (
	"os"
	"runtime"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil/leak"
)

// TestMain runs the child server of the Mark tests (startChild) when asked,
// and otherwise the tests (with Ps to spare for the event loops of
// parallel servers), failing the run if they leave goroutines behind
// (the runtime's and the fuzzing engine's own are not counted: see package
// leak).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	// Each event-loop server keeps one P per loop while its loops wait
	// (holdProcs): with the engines' subtests in parallel, two or three
	// such servers would leave the rest of the test process one P.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 8))
	os.Exit(leak.Main(m))
}
