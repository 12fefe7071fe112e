package floor

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// A paced floor's chat is MessageBytes long and starts as a packet does
// (protocol sheet §1): the Chat packet id and a type, then the time the
// schedule had it sent and the time it was sent (nanoseconds from the
// client's start, little-endian), then padding. The server relays it as it
// is, and sends its sender the room's Chat confirm (a real packet, whose
// size depends on the room's name). The client tells the two apart by the
// type, as a client reading packets would, and knows each one's length by
// it: no other parsing.
const (
	headerLen = 6
	typeAt    = 5 // the type's low byte (the type is big-endian)
	schedAt   = headerLen
	sentAt    = schedAt + 8
)

// pacing is a paced floor's schedule and packets.
type pacing struct {
	users           int
	pause, duration int64 // ns
	// offset is each connection's first send from the start (ns); order
	// is the connections by offset, the order in which they send in each
	// period of pause.
	offset []int64
	order  []int32
	// confirm is each room's Chat confirm.
	confirm [][]byte
}

// newPacing is the schedule of rooms × users paced users: each one's
// offset is uniform in [0, pause), drawn from seed, as volanogo load draws
// them.
func newPacing(rooms, users int, pause, duration time.Duration, seed int64) (*pacing, error) {
	n := rooms * users
	p := &pacing{users: users, pause: int64(pause), duration: int64(duration),
		offset: make([]int64, n), order: make([]int32, n), confirm: make([][]byte, rooms)}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>1^0x9e3779b97f4a7c15))
	for i := range p.offset {
		p.offset[i] = rng.Int64N(p.pause)
		p.order[i] = int32(i)
	}
	slices.SortFunc(p.order, func(a, b int32) int { return cmp.Compare(p.offset[a], p.offset[b]) })
	for r := range p.confirm {
		b, err := (&protocol.Chat{Type: protocol.Confirm, RoomName: roomName(r)}).AppendPacket(nil)
		if err != nil {
			return nil, err
		}
		if len(b) > MessageBytes || len(b) < headerLen || b[typeAt] != byte(protocol.Confirm) {
			return nil, fmt.Errorf("room %d's confirm: %d bytes", r, len(b))
		}
		p.confirm[r] = b
	}
	return p, nil
}

// chatFrame is a paced chat: the header of a Chat indication, then
// padding (the times are written at each send).
func chatFrame() []byte {
	b := protocol.AppendHeader(make([]byte, 0, MessageBytes), protocol.IDChat, protocol.Indication)
	for len(b) < MessageBytes {
		b = append(b, 'x')
	}
	return b
}
