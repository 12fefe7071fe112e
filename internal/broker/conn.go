package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// Protocols a Conn speaks.
const (
	NATS  = "nats"
	Redis = "redis"
	MQTT  = "mqtt"
)

// Protocols lists them, in the order the help names them.
var Protocols = []string{NATS, Redis, MQTT}

// Options configures a Conn.
type Options struct {
	// Protocol is NATS, Redis or MQTT.
	Protocol string
	// Prefix goes before a room's name to make its subject, channel or
	// topic ("" by default: the room's name as Mark names it, Room1).
	Prefix string
	// QoS is MQTT's quality of service for publications and
	// subscriptions: 0 (at most once, the default) or 1 (at least once).
	QoS int
	// ClientID is the MQTT client identifier, unique on the broker
	// (empty: one is made from the process and a counter).
	ClientID string
}

// Check says what is wrong with o, if anything.
func (o Options) Check() error {
	switch o.Protocol {
	case NATS, Redis, MQTT:
	default:
		return fmt.Errorf("broker protocol %q is not nats, redis or mqtt", o.Protocol)
	}
	if o.QoS != 0 && (o.Protocol != MQTT || o.QoS != 1) {
		if o.Protocol != MQTT {
			return fmt.Errorf("qos %d: only MQTT has a quality of service", o.QoS)
		}
		return fmt.Errorf("qos %d: MQTT QoS 0 or 1", o.QoS)
	}
	if bytes.ContainsAny([]byte(o.Prefix), " \t\r\n\x00") {
		return fmt.Errorf("prefix %q: a subject, channel or topic has no spaces or control characters", o.Prefix)
	}
	return nil
}

// Kinds of publication (see the package comment).
const (
	kindChat  = 'C'
	kindEnter = 'E'
	kindExit  = 'X'
)

// maxFrame bounds one frame from the broker (a message of another program
// on a room's subject may be large; ours are under 100 bytes).
const maxFrame = 1 << 20

// inSize is the size of a Conn's input buffer: a few dozen deliveries.
const inSize = 4096

// dialect is one broker protocol: the bytes of each operation, and the
// parser of what the broker sends.
type dialect interface {
	// handshake opens the session (blocking reads and writes).
	handshake(c *Conn) error
	subscribe(b []byte, c *Conn) []byte
	unsubscribe(b []byte, c *Conn) []byte
	publish(b []byte, c *Conn, kind byte, user, text []byte) []byte
	ping(b []byte) []byte
	// parse handles the first frame of b through the Conn's callbacks
	// (deliver, pong, brokerError, reply) and returns its length, or 0
	// when b holds no complete frame.
	parse(c *Conn, b []byte) (int, error)
}

// Conn is one user's connection to a broker, speaking VOLANO to the swarm
// (see the package comment). Read is called by one goroutine, Write by
// any (writes are serialised).
type Conn struct {
	o     Options
	d     dialect
	read  func([]byte) (int, error)
	write func([]byte) error

	// The reading side.
	in           []byte // the broker's bytes
	inPos, inEnd int
	out          []byte // VOLANO packets made, not yet read
	outPos       int
	acks         []byte // what the reading side answers (PONG, PUBACK)
	err          error  // sticky: the stream cannot be followed
	lastErr      string // the broker's last error, for the end of the stream

	// The writing side.
	wmu    sync.Mutex
	wbuf   []byte
	nextID uint16 // MQTT packet identifiers

	// Packets the writing side made for the reader (the Access confirm).
	mu       sync.Mutex
	local    []byte
	hasLocal atomic.Bool

	// Set at EnterRoom, before the room's first delivery.
	room, user, subject string
	userB, subjectB     []byte
	indPrefix           []byte // a Chat indication up to its user name
	chatConfirm         []byte
	enterConfirm        []byte

	// What the broker said of itself in the handshake.
	product, version string
}

// New returns a Conn over a connection whose bytes read and write move;
// call Handshake before anything else.
func New(o Options, read func([]byte) (int, error), write func([]byte) error) (*Conn, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	c := &Conn{o: o, read: read, write: write}
	switch o.Protocol {
	case NATS:
		c.d = &natsDialect{}
	case Redis:
		c.d = &redisDialect{}
	case MQTT:
		c.d = &mqttDialect{qos: byte(o.QoS)}
	}
	return c, nil
}

// Handshake opens the broker session: NATS's INFO and CONNECT, Redis's
// HELLO 3, MQTT's CONNECT. Its reads block (the caller sets a deadline).
func (c *Conn) Handshake() error { return c.d.handshake(c) }

// Server is what the broker said of itself in the handshake (NATS's INFO,
// Redis's HELLO): its product and version, empty when it did not say.
func (c *Conn) Server() (product, version string) { return c.product, c.version }

// Buffered is the bytes the Conn holds that a Read may return without
// reading the connection (or that it must read more to complete).
func (c *Conn) Buffered() int {
	n := len(c.out) - c.outPos + c.inEnd - c.inPos
	if c.hasLocal.Load() {
		n++
	}
	return n
}

// Read returns VOLANO packets: those the broker's frames translate into,
// reading the connection when it has none. An error of the read function
// that is a timeout (a deadline, or the swarm's would-block) leaves the
// Conn as it was.
func (c *Conn) Read(p []byte) (int, error) {
	for {
		if c.outPos < len(c.out) {
			n := copy(p, c.out[c.outPos:])
			c.outPos += n
			if c.outPos == len(c.out) {
				c.out, c.outPos = c.out[:0], 0
			}
			return n, nil
		}
		if c.hasLocal.Load() {
			c.mu.Lock()
			c.out = append(c.out, c.local...)
			c.local = c.local[:0]
			c.hasLocal.Store(false)
			c.mu.Unlock()
			continue
		}
		if c.err != nil {
			return 0, c.err
		}
		if c.inPos < c.inEnd {
			if err := c.translate(); err != nil {
				c.err = err
				return 0, err
			}
			if len(c.out) > 0 {
				continue
			}
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
}

// translate handles every complete frame in the input buffer, then sends
// what they call for (acknowledgements).
func (c *Conn) translate() error {
	for c.inPos < c.inEnd {
		n, err := c.d.parse(c, c.in[c.inPos:c.inEnd])
		if err != nil {
			return fmt.Errorf("%s: %w", c.o.Protocol, err)
		}
		if n == 0 {
			break
		}
		c.inPos += n
	}
	if c.inPos == c.inEnd {
		c.inPos, c.inEnd = 0, 0
	}
	if len(c.acks) > 0 {
		c.wmu.Lock()
		err := c.write(c.acks)
		c.wmu.Unlock()
		c.acks = c.acks[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// fill reads the connection once into the input buffer, making room for
// at least one byte more.
func (c *Conn) fill() error {
	if c.in == nil {
		c.in = make([]byte, inSize)
	}
	if c.inEnd == len(c.in) {
		switch {
		case c.inPos > 0:
			c.inEnd = copy(c.in, c.in[c.inPos:c.inEnd])
			c.inPos = 0
		case len(c.in) >= maxFrame:
			c.err = fmt.Errorf("%s: a frame of more than %d bytes", c.o.Protocol, maxFrame)
			return c.err
		default:
			nb := make([]byte, min(2*len(c.in), maxFrame))
			c.inEnd = copy(nb, c.in[c.inPos:c.inEnd])
			c.inPos = 0
			c.in = nb
		}
	}
	n, err := c.read(c.in[c.inEnd:])
	if n > 0 {
		c.inEnd += n
		return nil
	}
	if err == nil {
		return nil
	}
	if err == io.EOF {
		return &ClosedError{Protocol: c.o.Protocol, Text: c.lastErr}
	}
	return err
}

// ClosedError is the end of a stream that the broker closed, with the
// error it reported before, if any.
type ClosedError struct{ Protocol, Text string }

func (e *ClosedError) Error() string {
	if e.Text == "" {
		// nats-server and redis-server cut a slow consumer without a word.
		return fmt.Sprintf("the %s broker closed the connection without an error (a slow consumer cut: see the broker's log; or the broker stopped)", e.Protocol)
	}
	return fmt.Sprintf("the %s broker closed the connection after: %s", e.Protocol, e.Text)
}
func (e *ClosedError) Unwrap() error { return io.EOF }

// await reads until parse takes a complete frame (the handshake).
func (c *Conn) await(parse func(b []byte) (int, error)) error {
	for {
		if c.inPos < c.inEnd {
			n, err := parse(c.in[c.inPos:c.inEnd])
			if err != nil {
				return err
			}
			if n > 0 {
				c.inPos += n
				return nil
			}
		}
		if err := c.fill(); err != nil {
			return err
		}
	}
}

// Write translates one VOLANO request into the broker's operations and
// sends them.
func (c *Conn) Write(pkt []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b, err := c.request(c.wbuf[:0], pkt)
	c.wbuf = b[:0]
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	return c.write(b)
}

// request appends to b the broker's operations for one VOLANO request.
func (c *Conn) request(b, pkt []byte) ([]byte, error) {
	if len(pkt) >= 6 && protocol.ID(binary.BigEndian.Uint16(pkt)) == protocol.IDChat {
		// The hot path: a chat, without the generic decode.
		v, err := protocol.ParseChat(pkt[6:])
		if err != nil {
			return b, err
		}
		if c.subject == "" {
			return b, errors.New("a chat before EnterRoom")
		}
		return c.d.publish(b, c, kindChat, c.userB, v.Text), nil
	}
	p, err := protocol.DecodeMessage(pkt)
	if err != nil {
		return b, err
	}
	switch p := p.(type) {
	case *protocol.Access:
		confirm, err := (&protocol.Access{Type: protocol.Confirm, Result: protocol.AccessOK}).AppendPacket(nil)
		if err != nil {
			return b, err
		}
		c.mu.Lock()
		c.local = append(c.local, confirm...)
		c.hasLocal.Store(true)
		c.mu.Unlock()
	case *protocol.EnterRoom:
		if c.subject != "" {
			return b, fmt.Errorf("EnterRoom %s: a broker connection holds one room (in %s)", p.RoomName, c.room)
		}
		if err := c.enter(p.RoomName, p.UserName); err != nil {
			return b, err
		}
		b = c.d.subscribe(b, c)
		b = c.d.publish(b, c, kindEnter, c.userB, nil)
	case *protocol.ExitRoom:
		if c.subject == "" {
			return b, nil
		}
		b = c.d.publish(b, c, kindExit, c.userB, nil)
		b = c.d.unsubscribe(b, c)
	case *protocol.RoomList:
		b = c.d.ping(b)
	case *protocol.Ping:
		// The answer to a Ping request, which a Conn never makes.
	default:
		return b, fmt.Errorf("%s %s: not a request a broker target translates", p.PacketID(), p.PacketType())
	}
	return b, nil
}

// enter sets the room and the user, and the packets made for them.
func (c *Conn) enter(room, user string) error {
	if room == "" || user == "" {
		return errors.New("EnterRoom without a room or a user name")
	}
	if !printable(room) || !printable(user) {
		return fmt.Errorf("EnterRoom %q as %q: a broker target takes names of printable ASCII without spaces", room, user)
	}
	c.room, c.user, c.subject = room, user, c.o.Prefix+room
	c.userB, c.subjectB = []byte(user), []byte(c.subject)
	var err error
	c.indPrefix = protocol.AppendHeader(nil, protocol.IDChat, protocol.Indication)
	c.indPrefix = protocol.AppendBool(c.indPrefix, false)
	c.indPrefix = protocol.AppendInt32(c.indPrefix, 0)
	if c.indPrefix, err = protocol.AppendString(c.indPrefix, room); err != nil {
		return err
	}
	if c.chatConfirm, err = (&protocol.Chat{Type: protocol.Confirm, RoomName: room}).AppendPacket(nil); err != nil {
		return err
	}
	c.enterConfirm, err = (&protocol.EnterRoom{Type: protocol.Confirm, RoomName: room, UserName: user,
		Result: protocol.EnterOK, RoomType: protocol.RoomNormal}).AppendPacket(nil)
	return err
}

// printable reports whether s is printable ASCII without spaces.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// deliver translates one publication on the room's subject.
func (c *Conn) deliver(p []byte) {
	if len(p) < 2 {
		c.outsider(len(p))
		return
	}
	kind, rest := p[0], p[1:]
	switch kind {
	case kindChat:
		i := bytes.IndexByte(rest, ' ')
		if i < 1 {
			c.outsider(len(p))
			return
		}
		user, text := rest[:i], rest[i+1:]
		if string(user) == c.user {
			c.out = append(c.out, c.chatConfirm...)
			return
		}
		c.out = append(c.out, c.indPrefix...)
		c.out = appendName(c.out, user)
		c.out = appendText(c.out, text)
	case kindEnter:
		if string(rest) == c.user {
			c.out = append(c.out, c.enterConfirm...)
			return
		}
		c.out = c.news(&protocol.EnterRoom{Type: protocol.Indication, RoomName: c.room, UserName: string(rest), Member: "false", Link: "false"})
	case kindExit:
		if string(rest) == c.user {
			return
		}
		c.out = c.news(&protocol.ExitRoom{Type: protocol.Indication, RoomName: c.room, UserName: string(rest)})
	default:
		c.outsider(len(p))
	}
}

// news appends an EnterRoom or ExitRoom indication (a name that does not
// encode becomes an outsider's chat).
func (c *Conn) news(p protocol.Packet) []byte {
	b, err := p.AppendPacket(c.out)
	if err != nil {
		c.outsider(0)
		return c.out
	}
	return b
}

// outsider appends a chat of a user outside the run: a publication of
// another program on the room's subject, counted apart by the swarm.
func (c *Conn) outsider(n int) {
	c.out = append(c.out, c.indPrefix...)
	c.out = appendName(c.out, nil)
	c.out = appendText(c.out, fmt.Appendf(nil, "(a publication of %d bytes that is not volanogo's)", n))
}

// appendName appends a user name as a VOLANO string.
func appendName(b, name []byte) []byte { return appendText(b, name) }

// appendText appends s as a VOLANO string: as it is when it is ASCII (the
// swarm's chats), else through the encoder (an undecodable text becomes
// one that the ledger counts as corrupted).
func appendText(b, s []byte) []byte {
	if len(s) <= 0xffff && ascii(s) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		return append(b, s...)
	}
	out, err := protocol.AppendString(b, string(s))
	if err != nil {
		return appendText(b, []byte("(undecodable)"))
	}
	return out
}

// ascii reports whether s is ASCII without NUL (which modified UTF-8
// encodes in two bytes), eight bytes at a time.
func ascii(s []byte) bool {
	for len(s) >= 8 {
		v := binary.LittleEndian.Uint64(s)
		// A byte of 0x80 or more, or a zero byte (the classic test).
		if v&0x8080808080808080 != 0 || (v-0x0101010101010101)&^v&0x8080808080808080 != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}

// pong is the broker's answer to a ping: the RoomList confirm.
func (c *Conn) pong() {
	b, err := (&protocol.RoomList{Type: protocol.Confirm}).AppendPacket(c.out)
	if err == nil {
		c.out = b
	}
}

// brokerError reports an error the broker sent, as a StreamableError.
func (c *Conn) brokerError(text string) {
	if len(text) > 200 {
		text = text[:200]
	}
	c.lastErr = text
	b, err := (&protocol.StreamableError{Type: protocol.Request, Text: c.o.Protocol + " broker: " + text}).AppendPacket(c.out)
	if err == nil {
		c.out = b
	}
}

// reply queues bytes the reading side sends after its frames.
func (c *Conn) reply(b []byte) { c.acks = append(c.acks, b...) }

// payloadLen is the length of a publication's payload.
func payloadLen(kind byte, user, text []byte) int {
	if kind == kindChat {
		return 1 + len(user) + 1 + len(text)
	}
	return 1 + len(user)
}

// appendPayload appends a publication's payload.
func appendPayload(b []byte, kind byte, user, text []byte) []byte {
	b = append(b, kind)
	b = append(b, user...)
	if kind == kindChat {
		b = append(b, ' ')
		b = append(b, text...)
	}
	return b
}
