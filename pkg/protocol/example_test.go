package protocol_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// A Chat request as VolanoMark sends it, encoded and decoded again.
func Example() {
	req := &protocol.Chat{
		Type:     protocol.Request,
		RoomName: "Room1",
		UserName: "Mark1",
		Text:     "123456789 123456789 123456789 123456789 123456789 123456789 ",
	}
	b, err := req.AppendPacket(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes: % x ...\n", len(b), b[:13])

	p, n, err := protocol.Decode(b)
	if err != nil {
		panic(err)
	}
	chat := p.(*protocol.Chat)
	fmt.Println(n, p.PacketID(), p.PacketType(), chat.RoomName, chat.UserName)
	fmt.Printf("text %q, trimmed %q\n", chat.Text[50:], protocol.Trim(chat.Text)[50:])
	// Output:
	// 87 bytes: 00 cb 00 00 00 01 00 00 00 00 00 00 05 ...
	// 87 Chat request Room1 Mark1
	// text "123456789 ", trimmed "123456789"
}

// A server's hot path: read frames from a connection and relay each chat
// request as an indication, without allocating.
func ExampleParseChat() {
	var conn bytes.Buffer // stands for a net.Conn
	req := &protocol.Chat{Type: protocol.Request, RoomName: "Room1", UserName: "Mark1", Text: "hello "}
	b, _ := req.AppendPacket(nil)
	conn.Write(b)

	r := protocol.NewReader(&conn, 0)
	var out []byte
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		if f.ID != protocol.IDChat {
			continue
		}
		v, err := protocol.ParseChat(f.Body)
		if err != nil {
			panic(err)
		}
		v.UserName = []byte("Mark1") // the sender's registered name
		v.Text = protocol.TrimRaw(v.Text)
		out = protocol.AppendChatView(out[:0], protocol.Indication, v)
	}
	p, _ := protocol.DecodeMessage(out)
	fmt.Printf("%+v\n", *p.(*protocol.Chat))
	// Output:
	// {Type:indication Question:false RoomID:0 RoomName:Room1 UserName:Mark1 Text:hello}
}
