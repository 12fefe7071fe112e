package results

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRead: Read never panics, every error falls in a category, and a
// document it accepts writes and reads back the same.
func FuzzRead(f *testing.F) {
	valid := encoded(f, fullDocument(f))
	f.Add(valid)
	f.Add(valid[:len(valid)/3])
	f.Add([]byte("\x89PNG\r\n\x1a\n garbage"))
	f.Add([]byte(`{"schema": 1, "run_id": "x"}`))
	f.Add([]byte(`{"schema": 2}`))
	f.Add([]byte(`{"schema": 1, "run_id": "x", "latency": {"d": {"hdr": "HISTFAAAABx4nJNpmSzMwMDAxQABzFCaEUzMOwBhAAEAAAD//w==", "count": 1}}}`))
	f.Add([]byte(`{"schema": 1, "run_id": "x", "timeline": {"interval_seconds": 1, "sent": [1], "received": [2]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			var re *ReadError
			if !errors.As(err, &re) || re.Name != "fuzz.json" {
				t.Fatalf("error is not a *ReadError naming the input: %v", err)
			}
			if !errors.Is(err, ErrNotDocument) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnknownSchema) {
				t.Fatalf("error of no category: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, d); err != nil {
			t.Fatalf("an accepted document does not write: %v", err)
		}
		written := bytes.Clone(buf.Bytes())
		back, err := Read(&buf, "fuzz.json")
		if err != nil {
			t.Fatalf("a written document does not read: %v\n%s", err, written)
		}
		var again bytes.Buffer
		if err := Write(&again, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(written, again.Bytes()) {
			t.Fatalf("write, read, write differs:\n%s\n%s", written, again.Bytes())
		}
		// Merging accepted documents must not panic either, and gives a
		// valid document or an error.
		if d.Shard == nil {
			return
		}
		docs := []*Document{d}
		if d.Shard.Count > 1 {
			e := *back
			e.Shard = &Shard{Index: (d.Shard.Index + 1) % d.Shard.Count, Count: d.Shard.Count}
			docs = append(docs, &e)
		}
		m, err := Merge(docs)
		if err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("merged document is invalid: %v", err)
			}
		}
	})
}
