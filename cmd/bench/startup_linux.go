package main

import (
	"debug/elf"
	"strings"

	"os"

	"golang.org/x/sys/unix"
)

// dropCached drops the file's pages from the page cache; the next run
// reads them again as any run after the cache dropped them would, in
// 4 KiB folios (see stateReadByExec). How a binary's pages came into the
// cache weighs on its start-up: one the Go linker has just written
// (through a memory map: 4 KiB folios too) started 1-1.5 ms slower here
// than a copy of it written by one write(2) (2 MiB folios), same bytes,
// both cached. Dropping both binaries' pages measures them alike; a
// binary just built has dirty pages, which the kernel keeps until they
// are written back, so it is synced first.
func dropCached(path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	// Dirty pages are not dropped: the linker's are written back first.
	_ = f.Sync()
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// dynamicallyLinked names the program interpreter of an ELF binary
// linked dynamically, "" for a static one.
func dynamicallyLinked(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp := make([]byte, p.Filesz)
			if _, err := p.ReadAt(interp, 0); err == nil {
				return strings.TrimRight(string(interp), "\x00")
			}
			return "an interpreter"
		}
	}
	return ""
}
