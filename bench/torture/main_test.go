package main

import (
	"os"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil"
)

// TestMain fails the run if a test leaves goroutines behind.
func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
