package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// removedStamp is the file, beside the bench's work folders, whose time is
// when the last bench run removed its work folder.
const removedStamp = ".pipeline-bench-removed"

// deletionWindow is how long, on ext4 without a journal, inodes deleted in
// a block group make the next ones made there dearer (the allocator passes
// over those deleted within 60 s, 360 s while their table block is dirty):
// see the README's "inodes".
const deletionWindow = 6 * time.Minute

// recentRemoval says so when a bench run removed its work folder (a store
// of a thousand sessions or more) in dir less than deletionWindow ago: the
// figures on disk then read high, by 0.5-2 ms a run here.
func recentRemoval(dir string) {
	info, err := os.Stat(filepath.Join(dir, removedStamp))
	if err != nil {
		return
	}
	if ago := time.Since(info.ModTime()); ago < deletionWindow {
		fmt.Printf("note: a bench run removed its files in %s %s ago; on ext4 without a journal, inodes made within %s of many deletions cost more (README, \"inodes\"): figures on disk may read high\n\n",
			dir, ago.Round(time.Second), deletionWindow)
	}
}

// removeWork removes the work folder and stamps the time it did.
func removeWork(dir, work string) {
	os.RemoveAll(work)
	if f, err := os.Create(filepath.Join(dir, removedStamp)); err == nil {
		f.Close()
	}
}
