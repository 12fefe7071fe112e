package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// markText is Mark's chat text: 60 characters, the last a space.
const markText = "123456789 123456789 123456789 123456789 123456789 123456789 "

func markChatRequest(tb testing.TB) []byte {
	b, err := (&Chat{Type: Request, RoomName: "Room1", UserName: "Mark1", Text: markText}).AppendPacket(nil)
	if err != nil || len(b) != 87 {
		tb.Fatalf("chat request: %d bytes, %v", len(b), err)
	}
	return b
}

func markChatIndication(tb testing.TB) []byte {
	b, err := (&Chat{Type: Indication, RoomName: "Room1", UserName: "Mark2", Text: Trim(markText)}).AppendPacket(nil)
	if err != nil || len(b) != 86 {
		tb.Fatalf("chat indication: %d bytes, %v", len(b), err)
	}
	return b
}

// loopReader returns its data over and over, in reads of at most chunk
// bytes, without allocating.
type loopReader struct {
	data  []byte
	off   int
	chunk int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && n < l.chunk {
		c := copy(p[n:min(len(p), l.chunk)], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

// BenchmarkReaderChat: the hot path of both ends of a VolanoMark run: frame
// a chat (Mark's 87-byte requests and 86-byte indications, arriving in
// 1460-byte reads) and parse it without allocating. One op = one packet.
func BenchmarkReaderChat(b *testing.B) {
	var stream []byte
	for i := 0; i < 10; i++ {
		stream = append(stream, markChatRequest(b)...)
		stream = append(stream, markChatIndication(b)...)
	}
	r := NewReader(&loopReader{data: stream, chunk: 1460}, 0)
	b.SetBytes(int64(len(stream) / 20))
	b.ReportAllocs()
	var texts int
	for b.Loop() {
		f, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		if f.ID != IDChat {
			b.Fatal(f.ID)
		}
		v, err := ParseChat(f.Body)
		if err != nil {
			b.Fatal(err)
		}
		texts += len(TrimRaw(v.Text))
	}
	if texts == 0 {
		b.Fatal("no text")
	}
}

func BenchmarkDecodeChat(b *testing.B) {
	in := markChatIndication(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeChat(b *testing.B) {
	p := &Chat{Type: Indication, RoomName: "Room1", UserName: "Mark2", Text: Trim(markText)}
	buf := make([]byte, 0, 256)
	b.SetBytes(86)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p.AppendPacket(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelayChat: what a server does per chat request: parse, trim,
// and build the indication from the views.
func BenchmarkRelayChat(b *testing.B) {
	in := markChatRequest(b)
	buf := make([]byte, 0, 256)
	name := []byte("Mark1")
	b.ReportAllocs()
	for b.Loop() {
		v, err := ParseChat(in[headerLen:])
		if err != nil {
			b.Fatal(err)
		}
		v.UserName = name
		v.Text = TrimRaw(v.Text)
		buf = AppendChatView(buf[:0], Indication, v)
	}
}

func BenchmarkDecodeEnterRoomConfirm(b *testing.B) {
	p := &EnterRoom{Type: Confirm, Profile: "This is the profile for Mark20 in Room1.", RoomName: "Room1",
		UserName: "Mark20", Result: EnterOK, RoomType: RoomNormal, Count: 20}
	for i := 1; i <= 20; i++ {
		p.Users = append(p.Users, User{Name: fmt.Sprintf("Mark%d", i),
			Profile: fmt.Sprintf("This is the profile for Mark%d in Room1.", i), Member: "false", Link: "false"})
	}
	in, err := p.AppendPacket(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeString(b *testing.B) {
	for _, s := range []string{Trim(markText), strings.Repeat("é€", 30), strings.Repeat("😀", 15)} {
		b.Run(fmt.Sprintf("%d-bytes", len(s)), func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendString(buf[:0], s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
