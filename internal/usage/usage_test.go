package usage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIs(t *testing.T) {
	cause := errors.New("-count 0 runs forever")
	err := fmt.Errorf("step 2: %w", Errorf("--count: %w", cause))
	assert.True(t, Is(err))
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "step 2: --count: -count 0 runs forever", err.Error())
	assert.False(t, Is(cause))
	assert.False(t, Is(nil))
}
