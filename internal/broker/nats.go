package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// natsDialect is the NATS client protocol: text lines, one subscription
// (sid 1) per connection, the broker's echo on.
type natsDialect struct{}

// maxLine bounds a protocol line (NATS, Redis headers).
const maxLine = 4096

// natsConnect is the CONNECT line: no +OK for each operation (verbose),
// echo on (see the package comment).
const natsConnect = `CONNECT {"verbose":false,"pedantic":false,"name":"volanogo","lang":"go","protocol":1,"echo":true}` + "\r\nPING\r\n"

// natsInfo is what the handshake reads of the server's INFO.
type natsInfo struct {
	ServerName   string `json:"server_name"`
	Version      string `json:"version"`
	AuthRequired bool   `json:"auth_required"`
	TLSRequired  bool   `json:"tls_required"`
}

func (d *natsDialect) handshake(c *Conn) error {
	var info natsInfo
	err := c.await(func(b []byte) (int, error) {
		line, n, err := natsLine(b)
		if n == 0 || err != nil {
			return n, err
		}
		op, rest, _ := bytes.Cut(line, []byte(" "))
		if !bytes.EqualFold(op, []byte("INFO")) {
			return 0, fmt.Errorf("nats: the server's first line is not INFO: %q", clip(line))
		}
		if err := json.Unmarshal(rest, &info); err != nil {
			return 0, fmt.Errorf("nats: INFO: %w", err)
		}
		return n, nil
	})
	if err != nil {
		return err
	}
	switch {
	case info.AuthRequired:
		return errors.New("nats: the server requires authentication, which volanogo does not give")
	case info.TLSRequired:
		return errors.New("nats: the server requires TLS, which volanogo does not speak")
	}
	c.product, c.version = "nats-server", info.Version
	if err := c.write([]byte(natsConnect)); err != nil {
		return err
	}
	for done := false; !done; {
		err := c.await(func(b []byte) (int, error) {
			line, n, err := natsLine(b)
			if n == 0 || err != nil {
				return n, err
			}
			switch op, rest, _ := bytes.Cut(line, []byte(" ")); {
			case bytes.EqualFold(op, []byte("PONG")):
				done = true
			case bytes.EqualFold(op, []byte("-ERR")):
				return 0, fmt.Errorf("nats: CONNECT refused: %s", clip(rest))
			case bytes.EqualFold(op, []byte("PING")):
				if err := c.write([]byte("PONG\r\n")); err != nil {
					return 0, err
				}
			}
			// +OK and INFO pass.
			return n, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// natsLine returns the first line of b without its CRLF, and the bytes
// it takes (0: no complete line yet).
func natsLine(b []byte) (line []byte, n int, err error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		if len(b) > maxLine {
			return nil, 0, fmt.Errorf("nats: a line of more than %d bytes", maxLine)
		}
		return nil, 0, nil
	}
	return b[:i], i + 2, nil
}

func (d *natsDialect) subscribe(b []byte, c *Conn) []byte {
	b = append(b, "SUB "...)
	b = append(b, c.subject...)
	return append(b, " 1\r\n"...)
}

func (d *natsDialect) unsubscribe(b []byte, _ *Conn) []byte {
	return append(b, "UNSUB 1\r\n"...)
}

func (d *natsDialect) publish(b []byte, c *Conn, kind byte, user, text []byte) []byte {
	b = append(b, "PUB "...)
	b = append(b, c.subject...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(payloadLen(kind, user, text)), 10)
	b = append(b, "\r\n"...)
	b = appendPayload(b, kind, user, text)
	return append(b, "\r\n"...)
}

func (d *natsDialect) ping(b []byte) []byte { return append(b, "PING\r\n"...) }

// parse handles MSG and HMSG (a delivery), PING, PONG, -ERR, and passes
// +OK and INFO.
func (d *natsDialect) parse(c *Conn, b []byte) (int, error) {
	line, n, err := natsLine(b)
	if n == 0 || err != nil {
		return 0, err
	}
	if len(line) >= 4 && (line[0] == 'M' || line[0] == 'm') && (line[3] == ' ' || line[3] == '\t') {
		// MSG <subject> <sid> [reply-to] <#bytes>
		size, ok := lastNumber(line)
		if !ok {
			return 0, fmt.Errorf("a MSG line without its size: %q", clip(line))
		}
		end := n + size + 2
		if size > maxFrame {
			return 0, fmt.Errorf("a message of %d bytes", size)
		}
		if len(b) < end {
			return 0, nil
		}
		c.deliver(b[n : n+size])
		return end, nil
	}
	op, rest, _ := bytes.Cut(line, []byte(" "))
	switch {
	case bytes.EqualFold(op, []byte("HMSG")):
		// HMSG <subject> <sid> [reply-to] <#header bytes> <#total bytes>
		f := bytes.Fields(rest)
		if len(f) < 4 {
			return 0, fmt.Errorf("a HMSG line of %d fields: %q", len(f), clip(line))
		}
		hdr, err1 := strconv.Atoi(string(f[len(f)-2]))
		total, err2 := strconv.Atoi(string(f[len(f)-1]))
		if err1 != nil || err2 != nil || hdr < 0 || total < hdr || total > maxFrame {
			return 0, fmt.Errorf("a HMSG line with bad sizes: %q", clip(line))
		}
		end := n + total + 2
		if len(b) < end {
			return 0, nil
		}
		c.deliver(b[n+hdr : n+total])
		return end, nil
	case bytes.EqualFold(op, []byte("PING")):
		c.reply([]byte("PONG\r\n"))
	case bytes.EqualFold(op, []byte("PONG")):
		c.pong()
	case bytes.EqualFold(op, []byte("-ERR")):
		c.brokerError(string(clip(bytes.TrimSpace(rest))))
	case bytes.EqualFold(op, []byte("+OK")), bytes.EqualFold(op, []byte("INFO")):
	default:
		return 0, fmt.Errorf("an unknown operation: %q", clip(line))
	}
	return n, nil
}

// lastNumber reads the last space-separated field of line as a number.
func lastNumber(line []byte) (int, bool) {
	i := len(line)
	for i > 0 && (line[i-1] == ' ' || line[i-1] == '\t') {
		i--
	}
	end := i
	v := 0
	for i > 0 && line[i-1] >= '0' && line[i-1] <= '9' {
		i--
	}
	if i == end || end-i > 9 || i == 0 || (line[i-1] != ' ' && line[i-1] != '\t') {
		return 0, false
	}
	for _, ch := range line[i:end] {
		v = v*10 + int(ch-'0')
	}
	return v, true
}

// clip bounds a broker's line quoted in an error.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}
