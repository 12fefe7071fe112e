package metrics

import (
	"os"
	"testing"

	"github.com/volanogo/volanogo/internal/testutil/leak"
)

// TestMain fails the package's tests when one leaves a goroutine behind.
func TestMain(m *testing.M) { os.Exit(leak.Main(m)) }
