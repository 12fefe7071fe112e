package floor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// childEnv makes the test binary the clients' process of a floor.
const childEnv = "VOLANOGO_TEST_FLOOR_CHILD"

// TestMain runs the test binary as a floor's child when asked, and fails
// the run if a test leaves goroutines behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := RunChild(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			fmt.Fprintf(os.Stderr, "leaked %d goroutines\n", n-before)
			code = 1
		}
	}
	os.Exit(code)
}
