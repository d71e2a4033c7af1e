//go:build !linux

package store

import "os"

// fdatasyncLog is a full sync where the system has no fdatasync (macOS:
// os.File.Sync asks for F_FULLFSYNC).
func fdatasyncLog(f *os.File) error { return f.Sync() }
