package protocol

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// captureDir holds the recorded traffic of the original client and server
// (format: testdata/captures/README.md).
const captureDir = "../../testdata/captures"

// captureChunk is one recv() chunk of a capture.
type captureChunk struct {
	Time   float64
	Offset int
	Data   []byte
}

// captureStream is one direction of one connection.
type captureStream struct {
	Name   string // e.g. "stock/conn001-c2s"
	Chunks []captureChunk
	Data   []byte // all chunks concatenated
	EOF    bool   // the "# EOF" line was present
}

// readCapture parses a .hex capture file: "<time> <offset> <hex>" lines and
// a final "# EOF <time> <total bytes>" line. It checks that the offsets are
// contiguous and that the total matches.
func readCapture(t testing.TB, path string) captureStream {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rel, _ := filepath.Rel(captureDir, path)
	s := captureStream{Name: strings.TrimSuffix(rel, ".hex")}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		fields := strings.Fields(text)
		if fields[0] == "#" {
			require.Len(t, fields, 4, "%s:%d: EOF line", path, line)
			require.Equal(t, "EOF", fields[1], "%s:%d", path, line)
			total, err := strconv.Atoi(fields[3])
			require.NoError(t, err, "%s:%d", path, line)
			require.Equal(t, len(s.Data), total, "%s:%d: total", path, line)
			s.EOF = true
			continue
		}
		require.Len(t, fields, 3, "%s:%d", path, line)
		tm, err := strconv.ParseFloat(fields[0], 64)
		require.NoError(t, err, "%s:%d", path, line)
		off, err := strconv.Atoi(fields[1])
		require.NoError(t, err, "%s:%d", path, line)
		require.Equal(t, len(s.Data), off, "%s:%d: offset", path, line)
		data, err := hex.DecodeString(fields[2])
		require.NoError(t, err, "%s:%d", path, line)
		s.Chunks = append(s.Chunks, captureChunk{Time: tm, Offset: off, Data: data})
		s.Data = append(s.Data, data...)
	}
	require.NoError(t, sc.Err())
	return s
}

// allCaptures returns every .hex stream of both builds, sorted by name.
func allCaptures(t testing.TB) []captureStream {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(captureDir, "*", "*.hex"))
	require.NoError(t, err)
	require.Len(t, paths, 12, "2 builds x 3 connections x 2 directions")
	sort.Strings(paths)
	out := make([]captureStream, 0, len(paths))
	for _, p := range paths {
		out = append(out, readCapture(t, p))
	}
	return out
}

// decodedEntry is one packet line of a connNNN-decoded.txt file.
type decodedEntry struct {
	Dir    string // "C->S" or "S->C"
	Offset int
	ID     int
	Name   string
	Type   string
	Len    int
	Fields string // a Python dict literal
}

var decodedLine = regexp.MustCompile(`^\s*[\d.]+ (C->S|S->C) @(\d+)\s+id=(\d+)\s+(\S+)\s+(\S+)\s+len=(\d+)\s+(\{.*\})$`)

// readDecoded parses the packet lines of a -decoded.txt file (the hex dump
// lines under each are skipped), per direction in stream order.
func readDecoded(t testing.TB, path string) map[string][]decodedEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string][]decodedEntry{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "        ") {
			continue
		}
		m := decodedLine.FindStringSubmatch(line)
		require.NotNil(t, m, "%s: unparsed line %q", path, line)
		e := decodedEntry{Dir: m[1], Name: m[4], Type: m[5], Fields: m[7]}
		e.Offset, _ = strconv.Atoi(m[2])
		e.ID, _ = strconv.Atoi(m[3])
		e.Len, _ = strconv.Atoi(m[6])
		out[e.Dir] = append(out[e.Dir], e)
	}
	for dir, es := range out {
		sort.SliceStable(es, func(i, j int) bool { return es[i].Offset < es[j].Offset })
		out[dir] = es
	}
	return out
}

// pyStr renders s as Python's repr does for plain ASCII text.
func pyStr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"`
	}
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func pyStrs(v []string) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = pyStr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

type kv struct{ k, v string }

func pyDict(items ...kv) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = pyStr(it.k) + ": " + it.v
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// pyRepr renders the packets found in the captures as the -decoded.txt
// files do.
func pyRepr(p Packet) string {
	s := func(k, v string) kv { return kv{k, pyStr(v)} }
	i := func(k string, v int32) kv { return kv{k, strconv.Itoa(int(v))} }
	switch p := p.(type) {
	case *Access:
		if p.Type == Confirm {
			return pyDict(i("result", p.Result), kv{"rooms", pyStrs(p.Rooms)}, s("challenge", string(p.Challenge)))
		}
		return pyDict(s("defaultRoom", p.DefaultRoom), s("appletVersion", p.AppletVersion),
			s("documentBase", p.DocumentBase), s("codeBase", p.CodeBase), s("javaVendor", p.JavaVendor),
			s("javaVendorUrl", p.JavaVendorURL), s("javaVersion", p.JavaVersion),
			s("javaClassVersion", p.JavaClassVersion), s("osName", p.OSName), s("osVersion", p.OSVersion),
			s("osArch", p.OSArch))
	case *EnterRoom:
		items := []kv{s("profile", p.Profile), s("roomName", p.RoomName), s("userName", p.UserName)}
		switch p.Type {
		case Indication:
			items = append(items, s("address", p.Address), s("member", p.Member), s("link", p.Link))
		case Confirm:
			users := make([]string, len(p.Users))
			for j, u := range p.Users {
				users[j] = pyStrs([]string{u.Name, u.Profile, u.Host, u.Member, u.Link})
			}
			items = append(items, i("result", p.Result), i("roomType", p.RoomType), i("count", p.Count),
				kv{"users", "[" + strings.Join(users, ", ") + "]"})
		}
		return pyDict(items...)
	case *Chat:
		return pyDict(kv{"question", pyBool(p.Question)}, i("roomId", p.RoomID), s("roomName", p.RoomName),
			s("userName", p.UserName), s("text", p.Text))
	case *ExitRoom:
		return pyDict(s("roomName", p.RoomName), s("userName", p.UserName))
	case *RoomList:
		return pyDict(s("filter", p.Filter), kv{"rooms", pyStrs(p.Rooms)})
	}
	return fmt.Sprintf("%#v", p)
}

// capturedPacket is one packet of a capture stream, as cut by Decode.
type capturedPacket struct {
	Offset int
	Raw    []byte
	Packet Packet
}

// splitCapture decodes a whole stream with Decode, packet after packet.
func splitCapture(t testing.TB, s captureStream) []capturedPacket {
	t.Helper()
	var out []capturedPacket
	for off := 0; off < len(s.Data); {
		p, n, err := Decode(s.Data[off:])
		require.NoError(t, err, "%s @%d", s.Name, off)
		require.Positive(t, n)
		out = append(out, capturedPacket{Offset: off, Raw: s.Data[off : off+n], Packet: p})
		off += n
	}
	return out
}

// capturedPackets returns every packet of every capture (for seeds and
// benchmarks).
func capturedPackets(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, s := range allCaptures(t) {
		for _, p := range splitCapture(t, s) {
			out = append(out, p.Raw)
		}
	}
	return out
}
