// Package protocol is the wire protocol of the VOLANO chat server 2.13.4 as
// VolanoMark uses it: one struct per packet, a codec, a streaming Reader for
// TCP, and allocation-free views and encoders for the chat hot path.
//
// This comment is meant to be enough to write a compatible client or server
// in another language. The facts come from the project's protocol sheet
// (VOLANO-PROTOCOL.md, sections 1-4 and 9) and were checked against traffic
// recorded between the original Java client and server
// (testdata/captures, which the tests decode and re-encode byte for byte).
//
// # Framing
//
// One TCP connection per chat user, server port 8000 by default. There is
// no handshake, no length prefix and no delimiter: the stream is packets
// back to back, and a reader must know every body layout to find where a
// packet ends. An unknown id therefore ends the connection. Each packet is
//
//	u16 id     unsigned, big-endian
//	i32 type   1 request, 2 indication, 3 response, 4 confirm
//	body       layout chosen by the id and, for some packets, the type
//
// The legacy Access (id 17, from 2.1 clients, never sent by VolanoMark) has
// the 17 ASCII bytes "COM.volano.Access" between the id and the type. This
// package decodes it (without checking those bytes) but does not encode it.
//
// Writers send each packet whole, usually in one write; readers must still
// expect several packets, or part of one, per read (the captures show both).
// Over WebSocket, one message carries exactly one packet (DecodeMessage).
//
// # Primitive encodings
//
// All integers are big-endian (Java's DataOutputStream).
//
//	bool    1 byte, written 0 or 1; any non-zero byte reads as true
//	u8      1 byte, unsigned
//	i32     4 bytes, two's complement
//	i64     8 bytes, two's complement
//	str     u16 byte count (0..65535), then that many bytes of modified UTF-8
//	str[]   i32 count, then count str
//	str[]8  u8 count, then count str (CreateRooms only)
//	bytes8  u8 length, then that many raw bytes
//	user[]  i32 count, then per user 5 str: name, profile, host, member, link
//	        (member and link are the strings "true" / "false"; host is ""
//	        unless the server broadcasts addresses)
//
// Modified UTF-8 is Java's variant: U+0001..U+007F take one byte; U+0000
// (as C0 80, never a zero byte) and U+0080..U+07FF two; U+0800..U+FFFF
// three; a character beyond U+FFFF is written as its two UTF-16 surrogates,
// three bytes each (U+10000 is ED A0 80 ED B0 80), never as 4-byte UTF-8.
// Lengths in the protocol's limits are Java String.length(), i.e. UTF-16
// units: UTF16Len counts them on the wire form.
//
// Decoding follows the acceptance rules of Java's DataInputStream.readUTF,
// since that is what the original server and client do: a byte 0xxxxxxx is
// a character, a raw 0x00 byte included; 110xxxxx must be followed by one
// continuation byte (10xxxxxx) and 1110xxxx by two; anything else (a stray
// continuation byte, F0 and above, a sequence cut short) is malformed
// (ErrMalformedString), which ends the connection in the original server.
// Overlong 2- and 3-byte forms are accepted, as Java accepts them.
//
// In Go strings, a surrogate pair becomes one ordinary 4-byte UTF-8
// character; a lone surrogate, which Java allows in a String, is kept in the
// Go string as its 3-byte form (ED A0..BF xx, not valid Go UTF-8) and
// encoded back unchanged. The encoder refuses, with ErrMalformedString,
// other bytes that are not UTF-8, and with ErrStringTooLong any string whose
// encoding exceeds 65535 bytes.
//
// So decoding then re-encoding reproduces the input exactly for everything
// a Java writer produces. The only inputs that come back different are the
// ones no Java writer makes: a raw 0x00 byte or an overlong form in a string
// (re-encoded in the canonical form) and a bool byte other than 0 or 1
// (re-encoded as 1).
//
// # Packet ids
//
//	 id  packet           used by VolanoMark
//	  1  Access           yes
//	 17  Access (legacy)  no
//	101  Packet           no (header only)
//	102  StreamableError  only on errors
//	201  Authenticate     no (authentication must be off)
//	202  Beep             no
//	203  Chat             yes
//	204  CreateRooms      no
//	205  EnterPrivate     no
//	206  EnterRoom        yes
//	207  ExitPrivate      no
//	208  ExitRoom         yes
//	209  Halt             no (admin port)
//	210  Kick             no
//	211  Monitor          no (admin port)
//	212  PasswordAccess   no
//	213  Ping             no (server idle timeout only)
//	214  Report           no (admin port)
//	215  RoomList         yes
//	216  UserList         no
//	217  Whisper          no
//
// A VolanoMark build of the Java server may add an offset to the ids 1 and
// 201..217 so that benchmark and product builds cannot talk to each other;
// the committed source, and this package, use no offset.
//
// # Layouts
//
// Bodies only (after the header). Where a packet has a layout per type, a
// type not listed (including values other than 1..4, which the wire allows)
// is read and written with the request layout; the original reader has no
// check either, so an unexpected type desynchronises the stream there too.
//
//	Access (1)          request:  11 str: defaultRoom, appletVersion, documentBase,
//	                              codeBase, javaVendor, javaVendorUrl, javaVersion,
//	                              javaClassVersion, osName, osVersion, osArch
//	                    confirm:  result i32, rooms str[], challenge bytes8
//	                              (legacy id 17: no challenge)
//	StreamableError (102) every type: text str
//	Authenticate (201)  request:  signature bytes8
//	                    confirm:  result i32, rooms str[]
//	Beep (202)          every type: roomName, fromName, toName str
//	Chat (203)          every type: question bool, roomId i32, roomName str,
//	                              userName str, text str
//	CreateRooms (204)   every type: rooms str[]8 (each name at most 127 characters)
//	EnterPrivate (205)  request:  roomName, fromName, toName str
//	                    indication: the same, then roomId i32, fromHost str, fromProfile str
//	                    confirm:  the same, then roomId i32, toHost str, toProfile str
//	EnterRoom (206)     request:  profile, roomName, userName str (profile first)
//	                    indication: the same, then address, member, link str
//	                    confirm:  the same, then result i32, roomType i32, count i32, users user[]
//	ExitPrivate (207)   every type: roomId i32, fromName str
//	ExitRoom (208)      every type: roomName, userName str
//	Halt (209)          request:  password str;  confirm: allowed bool
//	Kick (210)          every type: roomName, kickerName, userName, userAddress str, method i32
//	Monitor (211)       request:  password str, interval i32;  confirm: allowed bool
//	PasswordAccess (212) request: the 11 Access request str, then member bool,
//	                              monitor bool, admin bool, memberName str,
//	                              memberPassword str, password str, stage bool, topic str
//	                    confirm:  the Access confirm body, then profile str
//	Ping (213), Packet (101)  header only
//	Report (214)        every type: time i64, freeMemory i64, totalMemory i64,
//	                              threads, connections, uniqueAddresses, rooms,
//	                              personalRooms, privateRooms i32, received i64, sent i64
//	RoomList (215)      every type: filter str, rooms str[]
//	UserList (216)      request:  roomName str
//	                    confirm:  roomName str, result i32, roomType i32,
//	                              documentBase str, users user[]
//	Whisper (217)       every type: roomName, fromName, toName, text str
//
// Result codes: Access 1 OK, 2 host denied, 3 document denied, 4 version
// denied, 5 bad password, 6 bad Java version, 7 host duplicate; EnterRoom
// 1 OK, 2 room full, 3 name taken, 4 member taken, 5 no such room (a failed
// confirm has roomType 0, count 0 and no users); UserList 1 OK, 2 no such
// room; room types 0 unknown, 1 normal, 2 event (auditorium); Kick methods
// 1 remove, 2 kick, 3 ban. See the constants.
//
// # Trimming
//
// The Java packet classes trim some strings when they read them (String.trim:
// every character <= U+0020, NUL included, goes from both ends), and since
// client and server share those classes the trimming is part of the
// protocol: the Access request's defaultRoom; EnterRoom's profile and
// userName (not roomName); Chat's userName and text (not roomName). No other
// field is trimmed. VolanoMark relies on it: its 60-character chat text ends
// with a space, and the indications carry 59 characters.
//
// Decode does not trim, so that re-encoding a decoded packet gives back the
// bytes that were read. Trimming, and the length limits measured after it,
// are the receiver's job (the server's, mostly): use Trim on decoded strings
// or TrimRaw on ChatView fields.
//
// # A VolanoMark session
//
// Each simulated user connects, sends an Access request (defaultRoom
// "Room<n>", appletVersion "2.13.4") and gets an Access confirm (result 1 and
// the room list); sends an EnterRoom request and gets, after the server has
// sent an EnterRoom indication to everyone already in the room, an EnterRoom
// confirm listing every user in the room. Then the chat:
//
//	client A -> server   Chat request     question=false, roomId=0, roomName, userName, text
//	server   -> others   Chat indication  same, userName = A's registered name, text trimmed
//	                                      (one per other user in the room, never back to A)
//	server   -> A        Chat confirm     question, roomId 0, roomName echoed; userName "", text ""
//
// The confirm only paces the sender. Mark takes turns: user k of n sends
// when (chats sent + indications received) mod n == k-1, so exactly one chat
// per room is in flight. When done, each user sends ExitRoom (the others get
// an ExitRoom indication) and a RoomList request, and closes the connection
// on the RoomList confirm. Every message therefore crosses the server once
// in and n times out (n-1 indications and a confirm).
//
// # Using this package
//
// Decode reads the first packet of a byte slice and tells its length, or
// says, with an error wrapping ErrIncomplete, that more bytes are needed.
// DecodeMessage reads exactly one packet (a WebSocket message). Both return
// pointers to the packet structs (*Chat, *EnterRoom, ...); the strings of
// one packet share a single allocation. Every error is a *DecodeError naming
// the packet, the field and its offset, and wrapping one of the sentinel
// errors; nothing panics on any input, and element counts are checked
// against the bytes that remain before anything is allocated for them.
//
// A Reader splits a TCP stream into Frames without allocating (after its
// buffer has grown to the largest packet seen, starting at 512 bytes and
// never beyond its maxPacket): Frame.Decode decodes one, and for the hot
// path ParseChat reads a Chat body into a ChatView of raw byte slices.
// AppendPacket, AppendChatView and the Append* helpers build packets into a
// caller's buffer without allocating.
package protocol
