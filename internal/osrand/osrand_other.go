//go:build !linux

package osrand

import "crypto/rand"

// Read fills b with random bytes from crypto/rand, which never fails.
func Read(b []byte) {
	_, _ = rand.Read(b)
}
