package results

import "golang.org/x/sys/windows"

func init() {
	for _, e := range []struct {
		errno error
		kind  string
	}{
		{windows.WSAECONNREFUSED, FailRefused},
		{windows.ERROR_CONNECTION_REFUSED, FailRefused},
		{windows.WSAEMFILE, FailOpenFiles},
		{windows.ERROR_TOO_MANY_OPEN_FILES, FailOpenFiles},
		{windows.WSAEADDRNOTAVAIL, FailNoSourcePort},
		{windows.WSAECONNRESET, FailReset},
		{windows.WSAECONNABORTED, FailReset},
		{windows.ERROR_NETNAME_DELETED, FailReset},
		{windows.ERROR_BROKEN_PIPE, FailReset},
		{windows.WSAETIMEDOUT, FailTimeout},
	} {
		platformErrnos = append(platformErrnos, struct {
			errno error
			kind  string
		}{e.errno, e.kind})
	}
}
