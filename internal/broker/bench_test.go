package broker

import (
	"testing"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// BenchmarkTranslate is the translation's cost per delivery: a chat of
// another user, 66 bytes of payload, from the broker's bytes to the
// VOLANO frame the user reads (read in batches of 32, as a busy socket
// returns them).
func BenchmarkTranslate(b *testing.B) {
	payload := "CMark2 000000002 000000001 123456789 123456789 123456789 123456789 "
	for _, proto := range Protocols {
		var frame []byte
		switch proto {
		case NATS:
			frame = []byte("MSG Room1 1 67\r\n" + payload + "\r\n")
		case Redis:
			frame = []byte(">3\r\n$7\r\nmessage\r\n$5\r\nRoom1\r\n$67\r\n" + payload + "\r\n")
		case MQTT:
			frame = mqttPacket(nil, mqttPublish<<4, append(mqttString(nil, []byte("Room1")), payload...))
		}
		var batch []byte
		for i := 0; i < 32; i++ {
			batch = append(batch, frame...)
		}
		b.Run(proto, func(b *testing.B) {
			s := &script{chunk: len(batch)}
			c, err := New(Options{Protocol: proto}, s.read, s.write)
			if err != nil {
				b.Fatal(err)
			}
			enter, _ := (&protocol.EnterRoom{Type: protocol.Request, RoomName: "Room1", UserName: "Mark1"}).AppendPacket(nil)
			if err := c.Write(enter); err != nil {
				b.Fatal(err)
			}
			rd := protocol.NewReader(c, 0)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if len(s.in) == 0 && c.Buffered() == 0 && rd.Buffered() == 0 {
					s.in = batch
				}
				f, err := rd.Next()
				if err != nil || f.ID != protocol.IDChat {
					b.Fatal(err, f.ID)
				}
			}
		})
	}
}
