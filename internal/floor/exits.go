package floor

import (
	"strconv"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// script is the exit phase of a floor: the packets of Mark's exit cascade,
// encoded once before the timed phase. After a room's last chat, its user
// 0 sends ExitRoom and RoomList (two sends, as Mark and volanogo load do);
// the server sends the leaver's ExitRoom indication to the users still in
// the room and the RoomList confirm to the leaver; user k sends its own
// once it has had k ExitRoom indications; a user closes its connection on
// its RoomList confirm, and the server closes its end on the end of file.
//
// Neither side parses: the server knows where a connection's exit starts
// by counting its bytes (count chats of MessageBytes, then the two
// requests), and a user knows its k-th indication and its confirm by
// theirs, the sizes being fixed by the names. The rooms are Room1 … and
// the users Mark1 …, as load names them, and the RoomList confirm lists
// the first rooms as volanogo serve does (at most roomListMax names), so
// each packet has the size it has in a real run.
// roomListMax and roomListMaxBytes bound a room list as volanogo serve
// bounds it by default (server.DefaultRoomListMax and RoomListMaxBytes:
// TestRoomListAsServe holds them equal; the floor does not import the
// server).
const (
	roomListMax      = 100
	roomListMaxBytes = 16 << 10
)

type script struct {
	users int
	// chatIn is the bytes of chats one connection receives; chatOut those
	// it sends.
	chatIn, chatOut int64
	// exitReq is each connection's ExitRoom request (its room, its user);
	// exitInd its ExitRoom indication, which the server sends to the
	// others when it leaves.
	exitReq, exitInd [][]byte
	// exitAt is the bytes of ExitRoom indications a connection receives
	// before it leaves (those of the users before it in its room).
	exitAt []int64
	// roomList is the RoomList request; listConf the server's confirm.
	roomList, listConf []byte
	// pacing is a paced floor's schedule and confirms (nil: turn-taking).
	pacing *pacing
}

func roomName(r int) string { return "Room" + strconv.Itoa(r+1) }
func userName(u int) string { return "Mark" + strconv.Itoa(u+1) }

// newScript encodes the exit phase of rooms × users connections that send
// count chats each.
func newScript(rooms, users, count int) (*script, error) {
	n := rooms * users
	sc := &script{
		users:   users,
		chatIn:  int64(count) * int64(users-1) * MessageBytes,
		chatOut: int64(count) * MessageBytes,
		exitReq: make([][]byte, n), exitInd: make([][]byte, n), exitAt: make([]int64, n),
	}
	var err error
	if sc.roomList, err = (&protocol.RoomList{Type: protocol.Request}).AppendPacket(nil); err != nil {
		return nil, err
	}
	names := []string{}
	bytes := 0
	for r := 0; r < rooms && len(names) < roomListMax; r++ {
		name := roomName(r)
		if bytes += 2 + len(name); bytes > roomListMaxBytes {
			break
		}
		names = append(names, name)
	}
	if sc.listConf, err = (&protocol.RoomList{Type: protocol.Confirm, Rooms: names}).AppendPacket(nil); err != nil {
		return nil, err
	}
	// One backing array for each kind: two allocations, not 2n.
	var reqs, inds []byte
	reqEnd, indEnd := make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		room, user := roomName(i/users), userName(i%users)
		if reqs, err = (&protocol.ExitRoom{Type: protocol.Request, RoomName: room, UserName: user}).AppendPacket(reqs); err != nil {
			return nil, err
		}
		if inds, err = (&protocol.ExitRoom{Type: protocol.Indication, RoomName: room, UserName: user}).AppendPacket(inds); err != nil {
			return nil, err
		}
		reqEnd[i], indEnd[i] = len(reqs), len(inds)
	}
	ro, io := 0, 0
	for i := 0; i < n; i++ {
		sc.exitReq[i] = reqs[ro:reqEnd[i]:reqEnd[i]]
		sc.exitInd[i] = inds[io:indEnd[i]:indEnd[i]]
		ro, io = reqEnd[i], indEnd[i]
		if i%users > 0 {
			sc.exitAt[i] = sc.exitAt[i-1] + int64(len(sc.exitInd[i-1]))
		}
	}
	return sc, nil
}

// reqEnd is the bytes connection i has sent once its exit requests are in.
func (sc *script) reqEnd(i int) int64 {
	return sc.chatOut + int64(len(sc.exitReq[i])+len(sc.roomList))
}
