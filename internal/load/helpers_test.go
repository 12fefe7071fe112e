package load

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func splitAddr(t testing.TB, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}
