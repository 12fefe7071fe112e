// Package protocol is the VOLANO chat wire protocol (VOLANO chat server
// 2.13.4, as spoken by VolanoMark): packet types, a codec, and a streaming
// Reader for TCP.
package protocol
