package main

import (
	"os"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil"
)

// TestMain is also the attack's helper process (the smoke test's Self),
// and fails the run if a test leaves goroutines behind.
func TestMain(m *testing.M) {
	if spec := os.Getenv(holdEnv); spec != "" {
		os.Exit(holdMain(spec, os.Stdin, os.Stdout))
	}
	os.Exit(testutil.Main(m))
}
