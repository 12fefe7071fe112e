package broker

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// script is a connection whose reads return in's bytes chunk bytes at a
// time and whose writes are kept.
type script struct {
	in    []byte
	chunk int
	out   bytes.Buffer
}

func (s *script) read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), s.chunk)], s.in)
	s.in = s.in[n:]
	return n, nil
}

func (s *script) write(b []byte) error { s.out.Write(b); return nil }

// entered is a Conn of Mark1 in Room1 over s, past its handshake.
func entered(t *testing.T, proto string, s *script) *Conn {
	t.Helper()
	c, err := New(Options{Protocol: proto, Prefix: "p."}, s.read, s.write)
	require.NoError(t, err)
	pkt, err := (&protocol.EnterRoom{Type: protocol.Request, RoomName: "Room1", UserName: "Mark1"}).AppendPacket(nil)
	require.NoError(t, err)
	require.NoError(t, c.Write(pkt))
	return c
}

// deliveries is what each protocol's broker sends for: Mark2's chat,
// Mark1's own chat (its echo), Mark3 entering, Mark1's own entry, Mark3
// leaving, a publication of another program, the answer to a ping, and
// an error.
var deliveries = map[string][]byte{
	NATS: []byte("MSG p.Room1 1 11\r\nCMark2 hi 1\r\n" + "MSG p.Room1 1 11\r\nCMark1 hi 2\r\n" +
		"MSG p.Room1 1 6\r\nEMark3\r\n" + "MSG p.Room1 1 6\r\nEMark1\r\n" + "PING\r\n" +
		"HMSG p.Room1 1 12 18\r\nNATS/1.0\r\n\r\nXMark3\r\n" + "MSG p.Room1 1 5\r\nhello\r\n" + "+OK\r\nPONG\r\n" +
		"-ERR 'Slow Consumer'\r\n"),
	Redis: []byte(">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$11\r\nCMark2 hi 1\r\n" + ":3\r\n" +
		">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$11\r\nCMark1 hi 2\r\n" +
		">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$6\r\nEMark3\r\n" + ">3\r\n$9\r\nsubscribe\r\n$7\r\np.Room1\r\n:1\r\n" +
		">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$6\r\nEMark1\r\n" +
		">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$6\r\nXMark3\r\n" + "%1\r\n+a\r\n*2\r\n:1\r\n_\r\n" +
		">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$5\r\nhello\r\n" + "+PONG\r\n" + "-ERR too slow\r\n"),
	MQTT: append(append(append(append(append(append(append(append(
		mqttPub("CMark2 hi 1"), mqttPub("CMark1 hi 2")...), mqttPub("EMark3")...), 0x90, 3, 0, 1, 0),
		mqttPub("EMark1")...), mqttPub("XMark3")...), mqttPub("hello")...), 0xd0, 0), 0xe0, 0),
}

func mqttPub(payload string) []byte {
	body := mqttString(nil, []byte("p.Room1"))
	return mqttPacket(nil, mqttPublish<<4, append(body, payload...))
}

// TestTranslate: what each broker sends becomes what a VOLANO server
// would have sent, whatever the reads' sizes.
func TestTranslate(t *testing.T) {
	want := []string{
		"Chat indication Mark2 hi 1", "Chat confirm  ", "EnterRoom indication Mark3", "EnterRoom confirm Mark1",
		"ExitRoom indication Mark3", "Chat indication  (a publication of 5 bytes that is not volanogo's)",
		"RoomList confirm", "StreamableError request",
	}
	for _, proto := range Protocols {
		for _, chunk := range []int{1, 3, 4096} {
			s := &script{in: deliveries[proto], chunk: chunk}
			c := entered(t, proto, s)
			rd := protocol.NewReader(c, 0)
			var got []string
			var last error
			for {
				p, err := rd.ReadPacket()
				if err != nil {
					last = err
					break
				}
				got = append(got, describe(p))
			}
			assert.Equal(t, want, got, "%s in reads of %d", proto, chunk)
			var ce *ClosedError
			require.True(t, errors.As(last, &ce), "%s: %v", proto, last)
			assert.ErrorIs(t, last, io.EOF)
			if proto == NATS {
				assert.Contains(t, s.out.String(), "PONG\r\n", "NATS's ping answered")
			}
		}
	}
}

func describe(p protocol.Packet) string {
	s := p.PacketID().String() + " " + p.PacketType().String()
	switch p := p.(type) {
	case *protocol.Chat:
		return s + " " + p.UserName + " " + p.Text
	case *protocol.EnterRoom:
		return s + " " + p.UserName
	case *protocol.ExitRoom:
		return s + " " + p.UserName
	}
	return s
}

// TestRequests: the broker operations of each VOLANO request.
func TestRequests(t *testing.T) {
	chat, err := (&protocol.Chat{Type: protocol.Request, RoomName: "Room1", UserName: "Mark1", Text: "hi 1"}).AppendPacket(nil)
	require.NoError(t, err)
	exit, err := (&protocol.ExitRoom{Type: protocol.Request, RoomName: "Room1", UserName: "Mark1"}).AppendPacket(nil)
	require.NoError(t, err)
	list, err := (&protocol.RoomList{Type: protocol.Request}).AppendPacket(nil)
	require.NoError(t, err)
	want := map[string]string{
		NATS: "SUB p.Room1 1\r\nPUB p.Room1 6\r\nEMark1\r\n" + "PUB p.Room1 11\r\nCMark1 hi 1\r\n" +
			"PUB p.Room1 6\r\nXMark1\r\nUNSUB 1\r\n" + "PING\r\n",
		Redis: "*2\r\n$9\r\nSUBSCRIBE\r\n$7\r\np.Room1\r\n*3\r\n$7\r\nPUBLISH\r\n$7\r\np.Room1\r\n$6\r\nEMark1\r\n" +
			"*3\r\n$7\r\nPUBLISH\r\n$7\r\np.Room1\r\n$11\r\nCMark1 hi 1\r\n" +
			"*3\r\n$7\r\nPUBLISH\r\n$7\r\np.Room1\r\n$6\r\nXMark1\r\n*2\r\n$11\r\nUNSUBSCRIBE\r\n$7\r\np.Room1\r\n" +
			"*1\r\n$4\r\nPING\r\n",
		MQTT: "\x82\x0c\x00\x01\x00\x07p.Room1\x00" + "\x30\x0f\x00\x07p.Room1EMark1" + "\x30\x14\x00\x07p.Room1CMark1 hi 1" +
			"\x30\x0f\x00\x07p.Room1XMark1" + "\xa2\x0b\x00\x02\x00\x07p.Room1" + "\xc0\x00",
	}
	for _, proto := range Protocols {
		s := &script{}
		c := entered(t, proto, s)
		for _, pkt := range [][]byte{chat, exit, list} {
			require.NoError(t, c.Write(pkt))
		}
		assert.Equal(t, want[proto], s.out.String(), proto)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		o   Options
		err string
	}{
		{Options{Protocol: NATS}, ""},
		{Options{Protocol: MQTT, QoS: 1, Prefix: "chat/"}, ""},
		{Options{Protocol: "amqp"}, `"amqp" is not nats, redis or mqtt`},
		{Options{Protocol: NATS, QoS: 1}, "only MQTT"},
		{Options{Protocol: MQTT, QoS: 2}, "QoS 0 or 1"},
		{Options{Protocol: Redis, Prefix: "a b"}, "no spaces"},
	} {
		err := tc.o.Check()
		if tc.err == "" {
			assert.NoError(t, err, "%+v", tc.o)
		} else {
			assert.ErrorContains(t, err, tc.err, "%+v", tc.o)
		}
	}
}

// FuzzParse: no input makes a parser panic or claim more than it has.
func FuzzParse(f *testing.F) {
	for _, b := range deliveries {
		f.Add(b)
	}
	f.Add([]byte("*99999999999\r\n"))
	f.Add([]byte("\x30\xff\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range Protocols {
			s := &script{}
			c := entered(t, proto, s)
			for rest := b; len(rest) > 0; {
				n, err := c.d.parse(c, rest)
				if err != nil || n == 0 {
					break
				}
				require.LessOrEqual(t, n, len(rest))
				rest = rest[n:]
			}
		}
	})
}

func TestASCII(t *testing.T) {
	assert.True(t, ascii([]byte("000000014 000000002 123456789 123456789 123456789 123456789 ")))
	assert.True(t, ascii(nil))
	for i := 0; i < 20; i++ {
		for _, x := range []byte{0, 0x80, 0xff} {
			b := []byte("abcdefghijklmnopqrst")
			b[i] = x
			assert.False(t, ascii(b), "%q", b)
		}
	}
}

// TestSilentClose: a broker that closes the connection without an error
// (nats-server and redis-server cutting a slow consumer) ends the stream
// with a ClosedError that says so, after the deliveries before it.
func TestSilentClose(t *testing.T) {
	for _, proto := range Protocols {
		var in []byte
		switch proto {
		case NATS:
			in = []byte("MSG p.Room1 1 11\r\nCMark2 hi 1\r\n")
		case Redis:
			in = []byte(">3\r\n$7\r\nmessage\r\n$7\r\np.Room1\r\n$11\r\nCMark2 hi 1\r\n")
		case MQTT:
			in = mqttPub("CMark2 hi 1")
		}
		s := &script{in: in, chunk: 4096}
		rd := protocol.NewReader(entered(t, proto, s), 0)
		p, err := rd.ReadPacket()
		require.NoError(t, err, proto)
		assert.Equal(t, "Chat indication Mark2 hi 1", describe(p), proto)
		_, err = rd.ReadPacket()
		var ce *ClosedError
		require.ErrorAs(t, err, &ce, proto)
		assert.ErrorIs(t, err, io.EOF)
		assert.Empty(t, ce.Text)
		assert.EqualError(t, err, "the "+proto+" broker closed the connection without an error (a slow consumer cut: see the broker's log; or the broker stopped)")
	}
}
