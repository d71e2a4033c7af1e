//go:build !linux

package main

// dropCached does nothing where the page cache cannot be asked to drop a
// file (see startup_linux.go).
func dropCached(string) {}

// dynamicallyLinked says nothing where the binary is not ELF.
func dynamicallyLinked(string) string { return "" }
