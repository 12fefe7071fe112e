//go:build !linux

package floor

import (
	"context"
	"io"

	"github.com/volanogo/volanogo/internal/results"
)

// Run measures the floor (Linux only).
func Run(ctx context.Context, s Spec) (results.Floor, error) {
	if err := s.normalize(); err != nil {
		return results.Floor{}, err
	}
	return results.Floor{}, ErrUnsupported
}

// RunChild is the child process of a floor (Linux only).
func RunChild(ctx context.Context, in io.Reader, out io.Writer) error { return ErrUnsupported }
