// Package usage has the one error type for a command line or a
// configuration that volanogo refuses, whichever layer refuses it (the
// commands, a campaign, a swarm): the commands print it with a hint to
// run --help and exit with status 2.
package usage

import (
	"errors"
	"fmt"
)

// Error is a refused command line or configuration.
type Error struct {
	Err error
	// Hint, when set, is printed after the error: "did you mean --rooms?".
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error of a formatted message (%w wraps as fmt.Errorf does).
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Is tells whether err is, or wraps, an Error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
