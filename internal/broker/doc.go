// Package broker lets the swarm measure pub/sub brokers (NATS, Redis pub/sub
// and MQTT) with the users, ledger, turn-taking and latency code that it
// uses against a VOLANO server: a Conn sits on a broker connection and
// speaks VOLANO to the swarm, as a VOLANO server would, translating each
// request the user writes into the broker's operations and each delivery
// the broker sends into the packet a VOLANO server would have sent.
//
// A room is a subject (NATS), a channel (Redis) or a topic (MQTT): the
// room's name after Options.Prefix. The broker sees three kinds of
// publication on it, each a payload of one kind byte and the user's name:
//
//	"C" user " " text   a chat, with the VOLANO chat's text (the sender's
//	                    number and the chat's number, padded to Mark's 60
//	                    characters: see the swarm's ledger)
//	"E" user            the user entered the room
//	"X" user            the user left it
//
// Each user publishes and subscribes on one connection (Redis: RESP3, so
// that a subscribed connection may publish; RESP2 would need two). The
// brokers deliver a publication to its publisher too (NATS's echo, Redis
// pub/sub, MQTT 3.1.1), so that a chat costs a broker what it costs a
// VOLANO server, which sends it to the other 19 users of the room and a
// confirm to its sender; the echo is translated into that confirm.
//
// Translation, request by request:
//
//	Access     the confirm at once (the handshake was made at the dial)
//	EnterRoom  subscribe, then publish "E"; the echo of "E" is the
//	           EnterRoom confirm, the others' "E" EnterRoom indications
//	Chat       publish "C"; the echo is the Chat confirm, the others'
//	           Chat indications
//	ExitRoom   publish "X", then unsubscribe; the others' "X" are ExitRoom
//	           indications, the echo is dropped
//	RoomList   a round trip to the broker (NATS and Redis PING, MQTT
//	           PINGREQ), whose answer is the RoomList confirm (no rooms):
//	           every earlier publication of the user has then been handled
//
// A publication that is not of this form (another program's, on the same
// subject) is a chat of a user outside the run, which the swarm counts
// apart. An error the broker reports becomes a StreamableError with its
// text, and a connection the broker closes after one returns that text
// with the end of the stream.
//
// A Conn does not own its socket: the caller gives it the functions that
// read and write the connection's bytes (a net.Conn's, or the swarm's raw
// reads), so that the swarm's cost per message stays one read(2) per
// wake-up whatever the target.
package broker
