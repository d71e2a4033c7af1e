package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pipeline-dev/pipeline/engine/search"
)

var (
	searchIndexOnly    = flag.Bool("search-index", false, "measure only the search index's build: -search-bytes of generated transcripts indexed from nothing by the first pipeline search, -search-index-rounds times, in turns with -search-index-against")
	searchIndexAgainst = flag.String("search-index-against", "", "an earlier pipeline binary (with its pipeline-temporal beside it) whose index build is measured in turns with -pipeline's")
	searchIndexRounds  = flag.Int("search-index-rounds", 2, "builds of the index per binary for -search-index")
	searchIndexSplit   = flag.Int("search-index-databases", 0, "for -search-index: also build -pipeline's index split into this many databases ("+search.DatabasesEnv+"), in the same turns")
)

// indexSubject is a binary whose index build is measured, and the
// databases it splits the index into (0: its own default).
type indexSubject struct {
	bin       string
	databases int
}

func (s indexSubject) String() string {
	if s.databases == 0 {
		return s.bin
	}
	return fmt.Sprintf("%s (%s=%d)", s.bin, search.DatabasesEnv, s.databases)
}

// indexBuild is one first search over the generated transcripts: its
// wall and CPU time, its peak memory and the index it left.
type indexBuild struct {
	took, cpu   time.Duration
	rssKB, size int64
	load        string
}

// searchIndexFigures writes total bytes of transcripts once, then builds
// their index from nothing through each binary in turns (pipeline, the
// earlier one, pipeline again...), so that the machine's load weighs on
// both alike; CPU time, which the load moves less, is printed beside
// the wall time.
func searchIndexFigures(pipeline, against, work string, total int64, rounds int) {
	root := filepath.Join(work, ".pipeline")
	fmt.Printf("pipeline search index bench: %d cores, files in %s; load average %s\n", numCPU(), work, loadAverage())
	gen := writeTranscripts(root, total)
	written := gen.Written
	fmt.Printf("generated %s of stream-json transcripts: %d sessions, %d files\n\n", mb(written), gen.Sessions, gen.Files)
	subjects := []indexSubject{{bin: pipeline}}
	if *searchIndexSplit > 0 {
		subjects = append(subjects, indexSubject{pipeline, *searchIndexSplit})
	}
	if against != "" {
		subjects = append(subjects, indexSubject{bin: against})
	}
	for round := 1; round <= rounds; round++ {
		for _, subject := range subjects {
			check(os.RemoveAll(filepath.Dir(search.Path(root))))
			b := indexBuild{load: loadAverage()}
			check(os.Unsetenv(search.DatabasesEnv))
			if subject.databases > 0 {
				check(os.Setenv(search.DatabasesEnv, fmt.Sprint(subject.databases)))
			}
			b.took, b.cpu, b.rssKB = runSearch(subject.bin, root, "indexing")
			check(os.Unsetenv(search.DatabasesEnv))
			b.size = indexSize(root)
			printIndexBuild(subject.String(), round, written, b)
		}
	}
	fmt.Printf("load average after: %s\n", loadAverage())
}

func printIndexBuild(bin string, round int, written int64, b indexBuild) {
	fmt.Printf("%s, round %d: %s in %s: %.1f MB/s; CPU %s: %.1f MB per CPU second; peak memory %s; the index %s (%.0f%% of the text); load average before %s\n",
		bin, round, mb(written), ms(b.took), float64(written)/1e6/b.took.Seconds(), ms(b.cpu), float64(written)/1e6/b.cpu.Seconds(),
		kb(b.rssKB), mb(b.size), 100*float64(b.size)/float64(written), b.load)
}
