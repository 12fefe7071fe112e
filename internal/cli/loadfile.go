package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// logFile is load's -file text log. A regular file (or a new one) is
// written to a temporary file in its directory and renamed over it at the
// end, so that a full or read-only filesystem leaves the old log as it
// was, never an empty or partial one; the first write error is kept and
// returned by close. Anything else (a device such as /dev/null, a FIFO, a
// symbolic link) is written in place, as Mark did.
type logFile struct {
	path string
	f    *os.File
	tmp  string // the temporary file ("": written in place)
	err  error  // the first write error
}

// openLogFile opens the -file log and writes head (the environment) to
// it, synced: the probe that a full or read-only filesystem fails before
// any run.
func openLogFile(path string, head func(io.Writer)) (*logFile, error) {
	l := &logFile{path: path}
	fi, err := os.Lstat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		dir, base := filepath.Split(path)
		if dir == "" {
			dir = "."
		}
		l.f, err = os.CreateTemp(dir, "."+base+".*.tmp")
		if err == nil {
			l.tmp = l.f.Name()
		} else {
			err = renamed(err, "create", path)
		}
	}
	if err != nil {
		return nil, l.wrap(err)
	}
	head(l)
	if l.err == nil && l.tmp != "" {
		l.err = l.f.Sync()
	}
	if l.err != nil {
		err := l.close()
		return nil, err
	}
	return l, nil
}

// Write writes to the log until a write fails; it never fails itself, so
// that what goes to standard output beside it goes on.
func (l *logFile) Write(p []byte) (int, error) {
	if l.err == nil && l.f != nil {
		_, l.err = l.f.Write(p)
	}
	return len(p), nil
}

// close ends the log: synced and renamed into place, or, after a write
// error, removed with the error returned (the old log, if any, is left as
// it was).
func (l *logFile) close() error {
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	err := l.err
	if l.tmp == "" {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return l.wrap(err)
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(l.tmp, l.path)
	}
	if err != nil {
		_ = os.Remove(l.tmp)
	}
	return l.wrap(err)
}

// wrap names the log in err: "-file volano-mark.log: write ...: no space
// left on device".
func (l *logFile) wrap(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && l.tmp != "" && pe.Path == l.tmp {
		err = renamed(err, pe.Op, l.path)
	}
	msg := err.Error()
	if !strings.Contains(msg, l.path) {
		return fmt.Errorf("-file %s: %w", l.path, err)
	}
	return fmt.Errorf("-file: %w", err)
}

// errWriter is standard output (or error) for load's text: the first
// write error is kept, and writes go on being accepted, so that a full
// disk under a redirected standard output is reported at the end, not
// lost.
type errWriter struct {
	w    io.Writer
	name string
	err  error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err == nil {
		if _, err := e.w.Write(p); err != nil {
			e.err = fmt.Errorf("%s: %w", e.name, err)
		}
	}
	return len(p), nil
}

// probeDir checks, before any run, that documents can be written in dir
// (or, when it does not exist yet, in its nearest existing parent, where
// it will be made): a temporary file of probeBytes is written, synced and
// removed. A full or read-only filesystem fails here rather than after a
// run.
func probeDir(dir string) error {
	for {
		fi, err := os.Stat(dir)
		if err == nil && !fi.IsDir() {
			return &fs.PathError{Op: "write", Path: dir, Err: errors.New("not a directory")}
		}
		if err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return err
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".volanogo-probe-*.tmp")
	if err != nil {
		return renamed(err, "write", dir)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return renamed(err, "write", dir)
	}
	return nil
}

// renamed is err about a temporary file told of the path the user gave
// (the temporary name says nothing to them).
func renamed(err error, op, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// probeBytes is the size of the probe: a result document's (tens of KB).
const probeBytes = 64 << 10
