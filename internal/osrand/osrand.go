// Package osrand fills buffers with random bytes from the operating
// system, as crypto/rand does, for names and tokens that must not be
// guessed (temporary files, session ids, CI stop tokens, trace ids).
//
// It exists for the start-up of every command: on Linux it asks
// getrandom(2) through golang.org/x/sys/unix, which pipeline links
// anyway, where crypto/rand would link math/big, math/rand and
// crypto/rand, whose package inits cost each start of pipeline about 7
// page faults. Other systems use crypto/rand.
package osrand

import "encoding/hex"

// Hex is n random bytes in hex (2n digits).
func Hex(n int) string {
	b := make([]byte, n)
	Read(b)
	return hex.EncodeToString(b)
}
