//go:build unix

package spec

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether the file is the current user's.
func ownedByMe(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
