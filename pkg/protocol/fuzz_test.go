package protocol

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"testing"
)

// FuzzDecode checks, for any input: Decode does not panic; a decoded packet
// re-encodes to bytes that decode to an equal packet; the Reader cuts the
// same frames whether the input arrives in one read, in two (split at a
// point derived from the input) or 1 to 3 bytes per read, and its frames
// agree with Decode.
func FuzzDecode(f *testing.F) {
	for _, s := range allCaptures(f) {
		f.Add(s.Data)
		for _, p := range splitCapture(f, s) {
			f.Add(p.Raw)
		}
	}
	f.Add([]byte{0x00, 0x11, 'C', 'O', 'M', '.', 'v', 'o', 'l', 'a', 'n', 'o', '.', 'A', 'c', 'c', 'e', 's', 's', 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{0x00, 0xCB, 0, 0, 0, 2, 1, 0, 0, 0, 7, 0, 2, 0xC0, 0x80, 0, 3, 0xED, 0xA0, 0x80, 0, 6, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80})
	f.Add([]byte{0x00, 0x01, 0, 0, 0, 4, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		p, n, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			_ = err.Error()
		} else {
			if n <= 0 || n > len(data) {
				t.Fatalf("length %d of %d bytes", n, len(data))
			}
			if a, ok := p.(*Access); !ok || !a.Legacy {
				enc, err := p.AppendPacket(nil)
				if err != nil {
					t.Fatalf("re-encode %#v: %v", p, err)
				}
				p2, err := DecodeMessage(enc)
				if err != nil {
					t.Fatalf("decode re-encoded %x: %v", enc, err)
				}
				if !equalPackets(p, p2) {
					t.Fatalf("round trip:\n%#v\n%#v", p, p2)
				}
			}
		}

		whole, werr := fuzzFrames(t, bytes.NewReader(data))
		h := fnv.New32a()
		h.Write(data)
		split := 0
		if len(data) > 0 {
			split = int(h.Sum32() % uint32(len(data)+1))
		}
		parts, perr := fuzzFrames(t, io.MultiReader(bytes.NewReader(data[:split]), bytes.NewReader(data[split:])))
		if len(whole) != len(parts) {
			t.Fatalf("split at %d: %d frames, %d in one read", split, len(parts), len(whole))
		}
		for i := range whole {
			if !bytes.Equal(whole[i], parts[i]) {
				t.Fatalf("split at %d: frame %d differs", split, i)
			}
		}
		if errString(werr) != errString(perr) {
			t.Fatalf("split at %d: error %v, %v in one read", split, perr, werr)
		}
		// and trickled, 1 to 3 bytes per read: the resumed scans cut
		// the same frames
		drip, derr := fuzzFrames(t, &chunkReader{data: data, rng: rand.New(rand.NewPCG(uint64(split), 1)), max: 3})
		if len(whole) != len(drip) || errString(werr) != errString(derr) {
			t.Fatalf("trickled: %d frames (%v), %d in one read (%v)", len(drip), derr, len(whole), werr)
		}
		for i := range whole {
			if !bytes.Equal(whole[i], drip[i]) {
				t.Fatalf("trickled: frame %d differs", i)
			}
		}

		// Frames agree with Decode.
		off := 0
		for i, raw := range whole {
			if !bytes.Equal(data[off:off+len(raw)], raw) {
				t.Fatalf("frame %d is not the next bytes of the input", i)
			}
			dp, n, err := Decode(data[off:])
			if err != nil {
				if errors.Is(err, ErrIncomplete) || errors.Is(err, ErrUnknownID) || errors.Is(err, ErrBadCount) {
					t.Fatalf("frame %d: Reader framed what Decode cannot: %v", i, err)
				}
			} else if n != len(raw) {
				t.Fatalf("frame %d: Reader %d bytes, Decode %d", i, len(raw), n)
			}
			if binaryID(raw) == IDChat {
				v, verr := ParseChat(raw[headerLen:])
				if (verr == nil) != (err == nil) {
					t.Fatalf("frame %d: ParseChat error %v, Decode error %v", i, verr, err)
				}
				if verr == nil {
					// The view keeps the raw strings (a raw 0x00 byte,
					// an overlong form), Decode canonicalises them: so
					// compare decoded packets.
					c, err := DecodeMessage(AppendChatView(nil, dp.PacketType(), v))
					if err != nil || !equalPackets(c, dp) {
						t.Fatalf("ParseChat + AppendChatView: %#v (%v), want %#v", c, err, dp)
					}
				}
			}
			off += len(raw)
		}
		if off == 0 && err == nil {
			t.Fatalf("Decode found a packet, the Reader none (%v)", werr)
		}
	})
}

func binaryID(raw []byte) ID { return ID(raw[0])<<8 | ID(raw[1]) }

// fuzzFrames returns copies of every frame and the final error.
func fuzzFrames(t *testing.T, r io.Reader) ([][]byte, error) {
	rd := NewReader(r, 0)
	var out [][]byte
	for {
		f, err := rd.Next()
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("Reader error %v is not a *DecodeError", err)
				}
			}
			return out, err
		}
		out = append(out, bytes.Clone(f.Raw))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// equalPackets compares two packets field by field (reflect.DeepEqual
// without importing testify into the fuzz loop).
func equalPackets(a, b Packet) bool {
	ea, err1 := a.AppendPacket(nil)
	eb, err2 := b.AppendPacket(nil)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb) && deepEqual(a, b)
}
