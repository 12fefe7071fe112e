package server

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigCheck: Config.check is the one place the settings' ranges
// are checked; a setting out of its range is a ConfigError naming the
// field (volanogo serve names its flag from it).
func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{RoomLimit: Off}, "RoomLimit"},
		{Config{MaxPacket: -5}, "MaxPacket"},
		{Config{MaxRooms: -2}, "MaxRooms"},
		{Config{MaxConnections: -1}, "MaxConnections"},
		{Config{Loops: -1}, "Loops"},
		{Config{IdleTimeout: -time.Second}, "IdleTimeout"},
		{Config{DrainTimeout: Off}, "DrainTimeout"},
		{Config{Engine: "kqueue"}, "Engine"},
		{Config{Engine: EngineEpoll, Coalesce: time.Second}, "Coalesce"},
		{Config{Coalesce: time.Millisecond}, "Coalesce"},
	} {
		_, err := New(tc.cfg)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc.cfg, err)
		assert.Equal(t, tc.field, ce.Field)
	}
	valid := []Config{{MaxRooms: Off, MaxPrivate: Off, AccessTimeout: Off}}
	if runtime.GOOS == "linux" {
		valid = append(valid, Config{Engine: EngineEpoll, Coalesce: MaxCoalesce})
	}
	for _, cfg := range valid {
		_, err := New(cfg)
		assert.NoError(t, err, "%+v", cfg)
	}
}
