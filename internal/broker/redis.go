package broker

import (
	"bytes"
	"fmt"
	"strconv"
)

// redisDialect is Redis's RESP3: HELLO 3 at the handshake, so that the
// subscribed connection may still PUBLISH and PING (RESP2 allows only
// (P|S)SUBSCRIBE, UNSUBSCRIBE, PING and QUIT there: a user would need a
// second connection to publish). Deliveries come as push values.
type redisDialect struct{}

// maxDepth bounds the nesting of a RESP value.
const maxDepth = 16

func (redisDialect) handshake(c *Conn) error {
	if err := c.write([]byte("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")); err != nil {
		return err
	}
	return c.await(func(b []byte) (int, error) {
		typ, line, n, err := respLine(b)
		if n == 0 || err != nil {
			return 0, err
		}
		switch typ {
		case '-', '!':
			if typ == '!' {
				m, err := respSkip(b, 0)
				if m == 0 || err != nil {
					return 0, err
				}
				line = blobOf(b[:m], n)
			}
			return 0, fmt.Errorf("redis: HELLO 3 refused (volanogo speaks RESP3: Redis 6 or later, no password): %s", clip(line))
		case '%':
		default:
			return 0, fmt.Errorf("redis: HELLO 3 answered with a %q value, not a map", typ)
		}
		pairs, ok := respCount(line)
		if !ok {
			return 0, fmt.Errorf("redis: a bad map length %q", clip(line))
		}
		off := n
		for i := 0; i < pairs; i++ {
			km, key, err := respScalar(b[off:])
			if km == 0 || err != nil {
				return 0, err
			}
			vm, val, err := respScalar(b[off+km:])
			if vm == 0 || err != nil {
				return 0, err
			}
			switch string(key) {
			case "server":
				c.product = string(val)
			case "version":
				c.version = string(val)
			}
			off += km + vm
		}
		if c.product == "redis" {
			c.product = "redis-server"
		}
		return off, nil
	})
}

func (redisDialect) subscribe(b []byte, c *Conn) []byte {
	b = append(b, "*2\r\n$9\r\nSUBSCRIBE\r\n"...)
	return respBulk(b, c.subjectB)
}

func (redisDialect) unsubscribe(b []byte, c *Conn) []byte {
	b = append(b, "*2\r\n$11\r\nUNSUBSCRIBE\r\n"...)
	return respBulk(b, c.subjectB)
}

func (redisDialect) publish(b []byte, c *Conn, kind byte, user, text []byte) []byte {
	b = append(b, "*3\r\n$7\r\nPUBLISH\r\n"...)
	b = respBulk(b, c.subjectB)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(payloadLen(kind, user, text)), 10)
	b = append(b, "\r\n"...)
	b = appendPayload(b, kind, user, text)
	return append(b, "\r\n"...)
}

func (redisDialect) ping(b []byte) []byte { return append(b, "*1\r\n$4\r\nPING\r\n"...) }

// respBulk appends s as a bulk string.
func respBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// parse handles one value: a push (or, from an older server, an array) of
// a message, a pong; a simple +PONG; an error; and passes the rest (the
// integer answer to each PUBLISH, the subscribe confirmations).
func (redisDialect) parse(c *Conn, b []byte) (int, error) {
	typ, line, n, err := respLine(b)
	if n == 0 || err != nil {
		return 0, err
	}
	switch typ {
	case '>', '*':
		count, ok := respCount(line)
		if !ok {
			return 0, fmt.Errorf("a bad aggregate length %q", clip(line))
		}
		var el [4][]byte
		off := n
		for i := 0; i < count; i++ {
			m, v, err := respScalar(b[off:])
			if m == 0 || err != nil {
				return 0, err
			}
			if i < len(el) {
				el[i] = v
			}
			off += m
		}
		switch {
		case count == 3 && bytes.Equal(el[0], []byte("message")):
			c.deliver(el[2])
		case count == 4 && bytes.Equal(el[0], []byte("pmessage")):
			c.deliver(el[3])
		case count >= 1 && bytes.EqualFold(el[0], []byte("pong")):
			c.pong()
		}
		return off, nil
	case '+':
		if bytes.EqualFold(line, []byte("PONG")) {
			c.pong()
		}
		return n, nil
	case '-':
		c.brokerError(string(clip(line)))
		return n, nil
	case '!':
		m, err := respSkip(b, 0)
		if m == 0 || err != nil {
			return 0, err
		}
		c.brokerError(string(clip(blobOf(b[:m], n))))
		return m, nil
	}
	return respSkip(b, 0)
}

// respLine reads a value's type byte and the rest of its first line.
func respLine(b []byte) (typ byte, line []byte, n int, err error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		if len(b) > maxLine {
			return 0, nil, 0, fmt.Errorf("redis: a line of more than %d bytes", maxLine)
		}
		return 0, nil, 0, nil
	}
	if i == 0 {
		return 0, nil, 0, fmt.Errorf("redis: an empty line")
	}
	return b[0], b[1:i], i + 2, nil
}

// respCount reads an aggregate's or a blob's length (-1: null).
func respCount(line []byte) (int, bool) {
	v, err := strconv.Atoi(string(line))
	if err != nil || v < -1 || v > maxFrame {
		return 0, false
	}
	return v, true
}

// blobOf is the content of a complete blob value of m bytes whose header
// takes n.
func blobOf(v []byte, n int) []byte {
	if len(v) < n+2 {
		return nil
	}
	return v[n : len(v)-2]
}

// respScalar reads one value: its length, and its content when it is a
// blob or a simple string (nil for any other, which it skips).
func respScalar(b []byte) (int, []byte, error) {
	typ, line, n, err := respLine(b)
	if n == 0 || err != nil {
		return 0, nil, err
	}
	switch typ {
	case '+':
		return n, line, nil
	case '$', '=':
		m, err := respSkip(b, 0)
		if m == 0 || err != nil || m == n {
			return m, nil, err
		}
		v := blobOf(b[:m], n)
		if typ == '=' && len(v) >= 4 {
			v = v[4:] // "txt:" before a verbatim string
		}
		return m, v, nil
	}
	m, err := respSkip(b, 0)
	return m, nil, err
}

// respSkip returns the length of the complete value at b (0: not complete
// yet).
func respSkip(b []byte, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("redis: values nested deeper than %d", maxDepth)
	}
	typ, line, n, err := respLine(b)
	if n == 0 || err != nil {
		return 0, err
	}
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		return n, nil
	case '$', '!', '=':
		size, ok := respCount(line)
		if !ok {
			return 0, fmt.Errorf("redis: a bad length %q", clip(line))
		}
		if size < 0 {
			return n, nil
		}
		if len(b) < n+size+2 {
			return 0, nil
		}
		if b[n+size] != '\r' || b[n+size+1] != '\n' {
			return 0, fmt.Errorf("redis: a blob of %d bytes not followed by CRLF", size)
		}
		return n + size + 2, nil
	case '*', '>', '~', '%', '|':
		count, ok := respCount(line)
		if !ok {
			return 0, fmt.Errorf("redis: a bad aggregate length %q", clip(line))
		}
		if typ == '%' || typ == '|' {
			count *= 2
		}
		off := n
		for i := 0; i < count; i++ {
			m, err := respSkip(b[off:], depth+1)
			if m == 0 || err != nil {
				return 0, err
			}
			off += m
		}
		if typ == '|' {
			// An attribute comes before the value it describes.
			m, err := respSkip(b[off:], depth+1)
			if m == 0 || err != nil {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return 0, fmt.Errorf("redis: an unknown value type %q", typ)
}
