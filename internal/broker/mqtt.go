package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// mqttDialect is MQTT 3.1.1 (the version every broker speaks): a clean
// session without keep-alive (the swarm's runs have their own deadlines),
// publications and the subscription at QoS 0 or 1. At QoS 1 the broker
// acknowledges each publication (PUBACK, passed) and the Conn each
// delivery, in one write after the frames of a read.
type mqttDialect struct{ qos byte }

// MQTT control packet types (the high nibble of the first byte).
const (
	mqttConnect     = 1
	mqttConnack     = 2
	mqttPublish     = 3
	mqttPuback      = 4
	mqttSubscribe   = 8
	mqttSuback      = 9
	mqttUnsubscribe = 10
	mqttUnsuback    = 11
	mqttPingreq     = 12
	mqttPingresp    = 13
	mqttDisconnect  = 14
)

// mqttClients numbers this process's MQTT clients, for unique client ids.
var mqttClients atomic.Int64

var mqttConnackCodes = map[byte]string{
	1: "unacceptable protocol version",
	2: "client identifier rejected",
	3: "server unavailable",
	4: "bad user name or password",
	5: "not authorized",
}

func (d *mqttDialect) handshake(c *Conn) error {
	id := c.o.ClientID
	if id == "" {
		id = "volanogo-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(mqttClients.Add(1), 10)
	}
	var v []byte
	v = mqttString(v, []byte("MQTT"))
	v = append(v, 4, 0x02, 0, 0) // level 4 (3.1.1), clean session, no keep-alive
	v = mqttString(v, []byte(id))
	if err := c.write(mqttPacket(nil, mqttConnect<<4, v)); err != nil {
		return err
	}
	return c.await(func(b []byte) (int, error) {
		typ, body, n, err := mqttFrame(b)
		if n == 0 || err != nil {
			return 0, err
		}
		if typ>>4 != mqttConnack || len(body) != 2 {
			return 0, fmt.Errorf("mqtt: the answer to CONNECT is packet type %d of %d bytes, not CONNACK", typ>>4, len(body))
		}
		if rc := body[1]; rc != 0 {
			why := mqttConnackCodes[rc]
			if why == "" {
				why = "code " + strconv.Itoa(int(rc))
			}
			return 0, fmt.Errorf("mqtt: CONNECT refused: %s", why)
		}
		return n, nil
	})
}

// packetID is the next packet identifier (never 0). Called under wmu.
func (c *Conn) packetID() uint16 {
	c.nextID++
	if c.nextID == 0 {
		c.nextID = 1
	}
	return c.nextID
}

func (d *mqttDialect) subscribe(b []byte, c *Conn) []byte {
	v := binary.BigEndian.AppendUint16(nil, c.packetID())
	v = mqttString(v, c.subjectB)
	v = append(v, d.qos)
	return mqttPacket(b, mqttSubscribe<<4|0x02, v)
}

func (d *mqttDialect) unsubscribe(b []byte, c *Conn) []byte {
	v := binary.BigEndian.AppendUint16(nil, c.packetID())
	v = mqttString(v, c.subjectB)
	return mqttPacket(b, mqttUnsubscribe<<4|0x02, v)
}

func (d *mqttDialect) publish(b []byte, c *Conn, kind byte, user, text []byte) []byte {
	size := 2 + len(c.subject) + payloadLen(kind, user, text)
	if d.qos > 0 {
		size += 2
	}
	b = append(b, mqttPublish<<4|d.qos<<1)
	b = mqttLength(b, size)
	b = mqttString(b, c.subjectB)
	if d.qos > 0 {
		b = binary.BigEndian.AppendUint16(b, c.packetID())
	}
	return appendPayload(b, kind, user, text)
}

func (d *mqttDialect) ping(b []byte) []byte { return append(b, mqttPingreq<<4, 0) }

// parse handles PUBLISH (a delivery, acknowledged at QoS 1), PINGRESP,
// SUBACK (a refused subscription is an error), and passes PUBACK and
// UNSUBACK.
func (d *mqttDialect) parse(c *Conn, b []byte) (int, error) {
	typ, body, n, err := mqttFrame(b)
	if n == 0 || err != nil {
		return 0, err
	}
	switch typ >> 4 {
	case mqttPublish:
		if len(body) < 2 {
			return 0, errors.New("a PUBLISH without its topic")
		}
		tl := int(binary.BigEndian.Uint16(body))
		off := 2 + tl
		qos := (typ >> 1) & 3
		if qos > 0 {
			off += 2
		}
		if off > len(body) {
			return 0, errors.New("a PUBLISH shorter than its topic")
		}
		switch qos {
		case 1:
			c.reply([]byte{mqttPuback << 4, 2, body[off-2], body[off-1]})
		case 2, 3:
			return 0, errors.New("a PUBLISH at QoS 2, which volanogo never asks for")
		}
		c.deliver(body[off:])
	case mqttPingresp:
		c.pong()
	case mqttSuback:
		for _, rc := range body[min(2, len(body)):] {
			if rc == 0x80 {
				c.brokerError("SUBACK: subscription to " + c.subject + " refused")
			}
		}
	case mqttPuback, mqttUnsuback:
	case mqttDisconnect:
		c.brokerError("DISCONNECT")
	default:
		return 0, fmt.Errorf("packet type %d, which a broker does not send a client", typ>>4)
	}
	return n, nil
}

// mqttFrame splits off the first control packet of b: its first byte, its
// body, and its length (0: not complete yet).
func mqttFrame(b []byte) (typ byte, body []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, nil
	}
	size, mult := 0, 1
	i := 1
	for {
		if i >= len(b) {
			return 0, nil, 0, nil
		}
		if i > 4 {
			return 0, nil, 0, errors.New("mqtt: a remaining length of more than 4 bytes")
		}
		size += int(b[i]&0x7f) * mult
		mult *= 128
		i++
		if b[i-1]&0x80 == 0 {
			break
		}
	}
	if size > maxFrame {
		return 0, nil, 0, fmt.Errorf("mqtt: a packet of %d bytes", size)
	}
	if len(b) < i+size {
		return 0, nil, 0, nil
	}
	return b[0], b[i : i+size], i + size, nil
}

// mqttPacket appends a control packet of the first byte and body.
func mqttPacket(b []byte, first byte, body []byte) []byte {
	b = append(b, first)
	b = mqttLength(b, len(body))
	return append(b, body...)
}

// mqttLength appends a remaining length.
func mqttLength(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// mqttString appends a length-prefixed string.
func mqttString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}
