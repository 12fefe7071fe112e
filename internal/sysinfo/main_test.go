package sysinfo

import (
	"os"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil/leak"
)

// TestMain fails the run if a test leaves goroutines behind (the runtime's
// and the fuzzing engine's own are not counted: see package leak).
func TestMain(m *testing.M) { os.Exit(leak.Main(m)) }
