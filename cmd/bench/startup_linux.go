package main

import (
	"debug/elf"
	"fmt"
	"os"
	"strings"
	"unsafe"

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
	// Read-only: fsync and fadvise need no more, and a binary some
	// process runs cannot be opened for writing (ETXTBSY).
	f, err := os.Open(path)
	if err != nil {
		fmt.Printf("      note: %s not dropped from the cache: %v\n", path, err)
		return
	}
	defer f.Close()
	// Dirty pages are not dropped: the linker's are written back first.
	_ = f.Sync()
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	if kept, all := residentPages(f); kept > 0 {
		fmt.Printf("      note: %d of the %d pages of %s stayed in the cache after the drop (a process maps them?): its (a) is not all read in by exec\n", kept, all, path)
	}
}

// residentPages counts the pages of f in the page cache (mincore of a
// mapping of it), and all its pages.
func residentPages(f *os.File) (kept, all int) {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return 0, 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0
	}
	defer unix.Munmap(m)
	pages := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&pages[0]))); errno != 0 {
		return 0, 0
	}
	for _, p := range pages {
		kept += int(p & 1)
	}
	return kept, len(pages)
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
