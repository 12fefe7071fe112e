//go:build !unix

package leak

import "os"

// quietSignal is a signal the test may ask for (there is no SIGUSR2).
var quietSignal = os.Interrupt
