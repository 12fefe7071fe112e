package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Error categories of Read, ReadFile and ReadPaths, testable with errors.Is.
var (
	// ErrNotDocument: the input is not JSON, or is JSON but not a result
	// document (not an object, no "schema" field, or a field of the wrong
	// type).
	ErrNotDocument = errors.New("not a result document")
	// ErrInvalid: a result document that fails validation (no run id, a
	// negative count, an undecodable histogram, ...). It is also an
	// ErrNotDocument: errors.Is(ErrInvalid, ErrNotDocument) is true.
	ErrInvalid error = &subError{"invalid result document", ErrNotDocument}
	// ErrUnknownSchema: the "schema" is below 1 or above SchemaVersion.
	ErrUnknownSchema = errors.New("unknown schema version")
	// ErrTruncated: the JSON ends early (an empty file, or a file cut short).
	ErrTruncated = errors.New("truncated result document")
)

type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// MaxDocumentBytes bounds what Read accepts. A document is small whatever
// the size of the run (tens of KB); a larger input is not one.
const MaxDocumentBytes = 16 << 20

// ReadError is the error of reading one input: the input's name, the
// category (ErrNotDocument, ErrInvalid, ErrUnknownSchema, ErrTruncated, or
// nil for an I/O error) and the cause.
type ReadError struct {
	Name string
	Kind error
	Err  error
}

func (e *ReadError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	b.WriteString(": ")
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
		if e.Err != nil {
			b.WriteString(": ")
		}
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap gives both the category and the cause to errors.Is and errors.As.
func (e *ReadError) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Read reads one result document from r; name names the input in errors.
// It accepts schema versions 1 to SchemaVersion, ignores fields it does not
// know (a later build of the same schema may add some) and validates the
// document (see Document.Validate). Errors are *ReadError. Read never panics.
func Read(r io.Reader, name string) (*Document, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, &ReadError{Name: name, Err: err}
	}
	if len(data) > MaxDocumentBytes {
		return nil, &ReadError{Name: name, Kind: ErrNotDocument, Err: fmt.Errorf("larger than %d bytes", MaxDocumentBytes)}
	}
	d, kind, err := decode(data)
	if err != nil {
		return nil, &ReadError{Name: name, Kind: kind, Err: err}
	}
	d.Source = name
	return d, nil
}

// decode parses and validates a document; on failure kind is the category.
func decode(data []byte) (d *Document, kind, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrTruncated, errors.New("empty input")
	}
	// First pass: is it a JSON object, and which schema?
	var probe map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&probe); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTruncated, fmt.Errorf("unexpected end of JSON after %d bytes", len(data))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, ErrNotDocument, errors.New("JSON but not an object")
		}
		return nil, ErrNotDocument, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, ErrNotDocument, errors.New("more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrNotDocument, errors.New("data after the JSON object")
	}
	if probe == nil {
		return nil, ErrNotDocument, errors.New("JSON but not an object")
	}
	raw, ok := probe["schema"]
	if !ok {
		return nil, ErrNotDocument, errors.New(`no "schema" field`)
	}
	var schema int
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, ErrNotDocument, fmt.Errorf(`"schema" is %s, not a version number`, clip(string(raw), 40))
	}
	if schema < 1 || schema > SchemaVersion {
		return nil, ErrUnknownSchema, fmt.Errorf("schema %d (this build of volanogo reads 1 to %d)", schema, SchemaVersion)
	}
	d = new(Document)
	if err := json.Unmarshal(data, d); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, ErrNotDocument, fmt.Errorf("field %q: %s where %s expected", te.Field, te.Value, te.Type)
		}
		return nil, ErrNotDocument, err
	}
	if err := d.Validate(); err != nil {
		return nil, ErrInvalid, err
	}
	return d, nil, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ReadFile reads the result document in the file at path.
func ReadFile(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ReadError{Name: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	return Read(f, path)
}

// unwrapPath drops the *PathError wrapper whose path ReadError already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadPaths reads the documents named by paths, in order: a file is one
// document; a directory gives every *.json file directly inside it (not
// recursively), sorted by name; "-" is one document read from stdin (an
// error if stdin is nil). Inputs that cannot be read are skipped and
// reported in errs (each a *ReadError naming the input); docs holds the
// rest. An empty directory gives neither documents nor errors.
func ReadPaths(paths []string, stdin io.Reader) (docs []*Document, errs []error) {
	add := func(d *Document, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		docs = append(docs, d)
	}
	for _, p := range paths {
		if p == "-" {
			if stdin == nil {
				add(nil, &ReadError{Name: "-", Err: errors.New("no standard input")})
				continue
			}
			add(Read(stdin, "-"))
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			add(nil, &ReadError{Name: p, Err: unwrapPath(err)})
			continue
		}
		if !fi.IsDir() {
			add(ReadFile(p))
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			add(nil, &ReadError{Name: p, Err: unwrapPath(err)})
			continue
		}
		var names []string
		for _, e := range entries {
			if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".json") {
				continue
			}
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			add(ReadFile(filepath.Join(p, n)))
		}
	}
	return docs, errs
}
