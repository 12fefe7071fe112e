package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Write writes d to w as indented JSON followed by a newline. It validates d
// first (see Document.Validate) so that whatever is written can be read
// back; a zero Schema is written as SchemaVersion. d is not modified.
func Write(w io.Writer, d *Document) error {
	data, err := marshal(d)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func marshal(d *Document) ([]byte, error) {
	if d == nil {
		return nil, fmt.Errorf("write result document: nil document")
	}
	c := *d
	if c.Schema == 0 {
		c.Schema = SchemaVersion
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("write result document: %w", err)
	}
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write result document: %w", err)
	}
	return append(data, '\n'), nil
}

// WriteFile writes d to path with WriteAtomic.
func WriteFile(path string, d *Document) error {
	data, err := marshal(d)
	if err != nil {
		return err
	}
	if err := WriteAtomic(path, data); err != nil {
		return fmt.Errorf("write result document: %w", err)
	}
	return nil
}

// ErrNotRegular is wrapped by the error of CheckOutput and WriteAtomic for
// a path that exists and is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// CheckOutput reports whether path may be written by WriteAtomic: it does
// not exist yet, or it is a regular file. A symbolic link, a device, a
// FIFO, a socket or a directory is never replaced (as root, renaming over
// /dev/stdout would replace the device node with a file): the error names
// the path and what it is, and wraps ErrNotRegular.
func CheckOutput(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().IsRegular():
		return nil
	}
	return &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%w (%s): volanogo writes only regular files; \"-\" is standard output", ErrNotRegular, fileKind(fi.Mode()))}
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// WriteAtomic writes data to path atomically: it writes a temporary file
// in the same directory, syncs it, and renames it over path, so that a
// reader sees either the old file or the whole new one, and an interrupted
// writer leaves no partial file behind (at most a ".tmp" file, removed on
// error). The file's mode is 0644. A path that exists and is not a
// regular file is refused (CheckOutput). `volanogo load -o` and `volanogo
// report -o` both write through it.
func WriteAtomic(path string, data []byte) (err error) {
	if err := CheckOutput(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = &fs.PathError{Op: "write", Path: path, Err: err}
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	// A file made at path meanwhile would be replaced by the rename; one
	// that is not regular must not be.
	if err = CheckOutput(path); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable where the platform allows it; failure is
// not an error (the rename itself has happened).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// OutputPath is where `-o dirOrFile` puts d. If dirOrFile is an existing
// directory or ends in a path separator, the file is a name derived from d
// inside it:
//
//	volanogo-<label>-r<rooms>-run<k>-<runid>[-shard<i>of<n>].json
//
// where rooms is d.Step (or else d.Config.Rooms), "-run<k>" is left out when
// d.Run is 0, runid is the run id (at most 32 characters), and the shard
// part is present for a shard (i counting from 0). Every part is sanitised to
// letters, digits, '.', '_' and '-'. Otherwise dirOrFile itself is returned.
// An empty dirOrFile means the current directory.
func OutputPath(dirOrFile string, d *Document) string {
	if dirOrFile == "" {
		dirOrFile = "."
	}
	isDir := strings.HasSuffix(dirOrFile, "/") || strings.HasSuffix(dirOrFile, string(filepath.Separator))
	if !isDir {
		if fi, err := os.Stat(dirOrFile); err == nil && fi.IsDir() {
			isDir = true
		}
	}
	if !isDir {
		return dirOrFile
	}
	return filepath.Join(dirOrFile, FileName(d))
}

// FileName is the file name OutputPath derives from d.
func FileName(d *Document) string {
	if d == nil {
		return "volanogo.json"
	}
	var b strings.Builder
	b.WriteString("volanogo")
	if l := sanitise(d.Label, 40); l != "" {
		b.WriteString("-" + l)
	}
	rooms := d.Step
	if rooms == 0 {
		rooms = d.Config.Rooms
	}
	b.WriteString("-r" + strconv.Itoa(rooms))
	if d.Run != 0 {
		b.WriteString("-run" + strconv.Itoa(d.Run))
	}
	// The whole run id (up to 32 characters): ids that share a prefix,
	// such as two epoch seconds, must not share a file.
	id := sanitise(d.RunID, 0)
	if len(id) > 32 {
		id = id[:32]
	}
	if id != "" {
		b.WriteString("-" + id)
	}
	if d.Shard != nil {
		fmt.Fprintf(&b, "-shard%dof%d", d.Shard.Index, d.Shard.Count)
	}
	b.WriteString(".json")
	return b.String()
}

// sanitise keeps letters, digits, '.', '_' and '-', replaces runs of other
// characters with one '_', trims separators at both ends, and cuts to max
// bytes (0 = no limit).
func sanitise(s string, max int) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			if !under {
				b.WriteByte('_')
				under = true
			}
			continue
		}
		under = false
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "._-")
	if max > 0 && len(out) > max {
		out = strings.TrimRight(out[:max], "._-")
	}
	return out
}
