package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcriptgen"
)

var (
	searchOnly    = flag.Bool("search", false, "measure only pipeline search: indexing -search-bytes of generated transcripts, then queries over that index")
	searchBytes   = flag.Int64("search-bytes", 1<<30, "bytes of transcripts for -search")
	searchQueries = flag.Int("search-queries", 300, "queries for the -search latency figures, in the bench's process and through the binary")
	searchKeep    = flag.String("search-keep", "", "for -search: keep the generated sessions and their index in this folder, and reuse them when it has them (the transcripts are not written again, nor indexed)")
	searchAgainst = flag.String("search-against", "", "for -search: another pipeline binary (an earlier build, with its pipeline-temporal beside it) whose queries run in turns with this one's, over the same index (it must read the same index format: each would rebuild one of another schema version)")
)

// sessionBytes is the size of one generated session's transcripts: two
// phases of two attempts each, 5 MB a file.
const sessionBytes = 20 << 20

// searchFigures writes total bytes of transcripts as sessions of a store
// in work, indexes them through the binary (the first pipeline search,
// with its CPU time and peak memory), then measures queries: in this
// process (the index alone), and through the binary (what a user waits
// for: start-up, the check for anything new across every file, the
// query), each kind of query on its own line, with the load average.
// With -search-keep the store and its index are kept, and a later run
// measures the queries alone over them; with -search-against, an earlier
// build's queries run in turns with this one's.
func searchFigures(pipeline, work string, total int64, queries int) {
	if *searchKeep != "" {
		work = *searchKeep
		check(os.MkdirAll(work, 0o755))
	}
	root := filepath.Join(work, ".pipeline")
	fmt.Printf("pipeline search bench: %d cores, files in %s; load average %s\n\n", numCPU(), work, loadAverage())
	start := time.Now()
	g, kept := keptTranscripts(work, total)
	if kept {
		fmt.Printf("1. kept from an earlier run (-search-keep): %s of stream-json transcripts: %d sessions, %d files\n\n", mb(g.Written), g.Sessions, g.Files)
		took, cpu, rss := runSearch(pipeline, root, "indexing")
		fmt.Printf("   the index: %s (%.0f%% of the text); a search with nothing new: %s, CPU %s, peak memory %s\n\n", mb(indexSize(root)),
			100*float64(indexSize(root))/float64(g.Written), ms(took), ms(cpu), kb(rss))
	} else {
		g = writeTranscripts(root, total)
		fmt.Printf("1. generated %s of stream-json transcripts: %d sessions, %d files, in %s\n\n", mb(g.Written), g.Sessions, g.Files, ms(time.Since(start)))
		indexingFigures(pipeline, root, g)
		if *searchKeep != "" {
			keepTranscripts(work, g)
		}
	}
	qs := benchQueries(queries)
	fmt.Printf("3. queries: %d, varied (common, middling and rare words, two words, phrases; a fifth with --phase); load average %s\n", len(qs), loadAverage())
	printQueryFigures("in this process (the index alone)", queriesInProcess(root, qs))
	fmt.Println()
	against := ""
	if *searchAgainst != "" {
		var err error
		against, err = filepath.Abs(*searchAgainst)
		check(err)
	}
	mine, theirs := queriesThroughBinaries(pipeline, against, root, qs)
	printQueryFigures("pipeline search (the binary, start to end)", mine)
	if against != "" {
		printQueryFigures("-search-against "+filepath.Base(filepath.Dir(against))+"/"+filepath.Base(against)+" (in turns)", theirs)
	}
	fmt.Printf("   load average after: %s\n\n", loadAverage())
}

// indexingFigures times the first search, which indexes everything, and
// one with nothing new.
func indexingFigures(pipeline, root string, g generated) {
	load := loadAverage()
	took, cpu, rss := runSearch(pipeline, root, "indexing")
	size := indexSize(root)
	fmt.Printf("2. indexing (the first pipeline search): %s in %s: %.1f MB/s; CPU %s: %.1f MB per CPU second; peak memory %s\n",
		mb(g.Written), ms(took), float64(g.Written)/1e6/took.Seconds(), ms(cpu), float64(g.Written)/1e6/cpu.Seconds(), kb(rss))
	fmt.Printf("   the index: %s (%.0f%% of the text); load average before %s, after %s\n", mb(size),
		100*float64(size)/float64(g.Written), load, loadAverage())
	took, cpu, rss = runSearch(pipeline, root, "indexing")
	fmt.Printf("   a search with nothing new (%d sessions, %d files): %s, CPU %s, peak memory %s\n\n", g.Sessions, g.Files, ms(took), ms(cpu), kb(rss))
}

// queriesInProcess runs the queries on the index opened in this process.
func queriesInProcess(root string, qs []benchQuery) queryTimes {
	st, err := store.Open(root)
	check(err)
	defer st.Close()
	ix, err := search.Open(st, search.Options{Warn: os.Stderr})
	check(err)
	defer ix.Close()
	return timeQueries(qs, func(q search.Query) (int, time.Duration) {
		before := selfCPU()
		found, err := ix.Find(context.Background(), q)
		check(err)
		return len(found), selfCPU() - before
	})
}

// queriesThroughBinaries runs each query through pipeline and, when
// against is not "", through against right after it, so that the load
// weighs on both alike.
func queriesThroughBinaries(pipeline, against, root string, qs []benchQuery) (mine, theirs queryTimes) {
	mine, theirs = newQueryTimes(), newQueryTimes()
	for _, q := range qs {
		mine.add(q.class, func() (int, time.Duration) { return searchThrough(pipeline, root, q.query) })
		if against != "" {
			theirs.add(q.class, func() (int, time.Duration) { return searchThrough(against, root, q.query) })
		}
	}
	return mine, theirs
}

// searchThrough runs one query through a pipeline binary: its hits and
// its CPU time.
func searchThrough(pipeline, root string, q search.Query) (int, time.Duration) {
	args := []string{"search", "--state-dir", root, "-o", "json", q.Text}
	if q.Phase != "" {
		args = append(args, "--phase", q.Phase)
	}
	cmd := exec.Command(pipeline, args...)
	out, err := cmd.CombinedOutput()
	if !foundOrNot(err) {
		check(fmt.Errorf("%s %s: %v: %s", pipeline, strings.Join(args, " "), err, out))
	}
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return strings.Count(string(out), `"session":`), cpu
}

// generated is what writeTranscripts wrote.
type generated struct {
	Written         int64
	Sessions, Files int
}

// keptName is the file, in a -search-keep folder, that says what was
// generated there: written once the index is made, so that a run cut
// short is not taken for a whole one.
const keptName = "search-bench.json"

// keptTranscripts reads what an earlier run generated in work, and tells
// whether it is there, whole and of the size asked for.
func keptTranscripts(work string, total int64) (generated, bool) {
	var g generated
	raw, err := os.ReadFile(filepath.Join(work, keptName))
	if err != nil || json.Unmarshal(raw, &g) != nil || g.Written < total {
		return g, false
	}
	return g, true
}

// keepTranscripts records what was generated in work (see keptName).
func keepTranscripts(work string, g generated) {
	raw, err := json.Marshal(g)
	check(err)
	check(os.WriteFile(filepath.Join(work, keptName), raw, 0o644))
}

// writeTranscripts writes total bytes of generated transcripts as
// sessions of the store at root.
func writeTranscripts(root string, total int64) generated {
	var (
		written         int64
		sessions, files int
	)
	st, err := store.Open(root)
	check(err)
	defer st.Close()
	gen := transcriptgen.New(42)
	for written < total {
		id := fmt.Sprintf("20261120-%09d-bench", sessions)
		x, err := st.Create(store.Meta{ID: id, Key: "k" + id, Pipeline: "bench", Created: time.Now()})
		check(err)
		for _, phase := range []string{"implementation", "testing"} {
			for attempt := 1; attempt <= 2 && written < total; attempt++ {
				f, err := x.CreateTranscript(phase, attempt, "agent")
				check(err)
				w := bufio.NewWriterSize(f, 1<<20)
				n, err := gen.Write(w, min(sessionBytes/4, total-written), id)
				check(err)
				check(w.Flush())
				check(f.Close())
				written += n
				files++
			}
		}
		check(x.WriteSnapshot(1, []byte(`{"phases":[]}`), store.Summary{ID: id, Key: x.Meta.Key, Pipeline: "bench", Status: "completed"}))
		check(x.Close())
		sessions++
	}
	return generated{written, sessions, files}
}

// runSearch runs one pipeline search, and reports its wall time, its
// CPU time (user and system) and its peak resident memory in kB.
func runSearch(pipeline, root, query string) (took, cpu time.Duration, rssKB int64) {
	cmd := exec.Command(pipeline, "search", "--state-dir", root, "-o", "json", query)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took = time.Since(start)
	if !foundOrNot(err) {
		check(fmt.Errorf("pipeline search: %v: %s", err, out))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		rssKB = ru.Maxrss
	}
	return took, cpu, rssKB
}

// foundOrNot tells whether a pipeline search ended well: 0 found
// something, 1 nothing (as grep).
func foundOrNot(err error) bool {
	var exit *exec.ExitError
	return err == nil || errors.As(err, &exit) && exit.ExitCode() == 1
}

// indexSize is the size of the index's files: each database and its
// write-ahead log.
func indexSize(root string) int64 {
	var size int64
	for _, path := range search.Paths(root) {
		for _, suffix := range []string{"", "-wal"} {
			if info, err := os.Stat(path + suffix); err == nil {
				size += info.Size()
			}
		}
	}
	return size
}

// queryTimes are the durations (wall and CPU) and hit counts of
// queries, by kind.
type queryTimes struct {
	byClass, cpuByClass map[string][]time.Duration
	hits                map[string]int
	all, cpu            []time.Duration
}

func newQueryTimes() queryTimes {
	return queryTimes{byClass: map[string][]time.Duration{}, cpuByClass: map[string][]time.Duration{}, hits: map[string]int{}}
}

// add times one query of class; run returns its hits and CPU time.
func (t *queryTimes) add(class string, run func() (int, time.Duration)) {
	start := time.Now()
	n, cpu := run()
	d := time.Since(start)
	t.byClass[class] = append(t.byClass[class], d)
	t.cpuByClass[class] = append(t.cpuByClass[class], cpu)
	t.all = append(t.all, d)
	t.cpu = append(t.cpu, cpu)
	t.hits[class] += n
}

// timeQueries runs each query; run returns its hits and CPU time.
func timeQueries(qs []benchQuery, run func(search.Query) (int, time.Duration)) queryTimes {
	t := newQueryTimes()
	for _, q := range qs {
		t.add(q.class, func() (int, time.Duration) { return run(q.query) })
	}
	return t
}

// printQueryFigures prints the wall times of each kind of query, and
// their CPU times' p50 and p99, which the machine's load distorts less.
func printQueryFigures(label string, t queryTimes) {
	fmt.Printf("   %-47s %9s %9s %9s   %s\n", label, "p50", "p99", "max", "hits (mean); CPU p50, p99")
	cpu := func(d []time.Duration) string {
		s := sorted(d)
		return fmt.Sprintf("; CPU %s, %s", ms(pct(s, 50)), ms(pct(s, 99)))
	}
	for _, class := range queryClasses {
		printDurations("     "+class, t.byClass[class], fmt.Sprintf("  %.1f%s", float64(t.hits[class])/float64(len(t.byClass[class])), cpu(t.cpuByClass[class])))
	}
	printDurations("     all", t.all, "  "+cpu(t.cpu)[2:]+" (target: p50 under 50 ms, p99 under 150 ms)")
}

// selfCPU is this process's CPU time so far (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var queryClasses = []string{"common word", "middling word", "rare word", "two words", "phrase"}

type benchQuery struct {
	class string
	query search.Query
}

// benchQueries picks n queries by the ranks of the generator's words,
// seeded: what a person types is mostly a word of middling frequency.
func benchQueries(n int) []benchQuery {
	words := transcriptgen.Vocabulary()
	rng := rand.New(rand.NewPCG(7, 7))
	gen := transcriptgen.New(99)
	word := func(from, to int) string { return words[from+rng.IntN(to-from)] }
	var out []benchQuery
	for i := range n {
		var q benchQuery
		switch i % 10 {
		case 0, 1:
			q = benchQuery{"common word", search.Query{Text: word(10, 100)}}
		case 2, 3, 4:
			q = benchQuery{"middling word", search.Query{Text: word(100, 2000)}}
		case 5, 6:
			q = benchQuery{"rare word", search.Query{Text: word(2000, len(words))}}
		case 7, 8:
			q = benchQuery{"two words", search.Query{Text: word(50, 2000) + " " + word(100, 5000)}}
		default:
			q = benchQuery{"phrase", search.Query{Text: `"` + gen.Word() + " " + gen.Word() + `"`}}
		}
		if (i/10)%5 == 0 {
			q.query.Phase = "testing" // every class, one round in five
		}
		out = append(out, q)
	}
	return out
}

func mb(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }

// kb prints a size in kB (as rusage gives it) in MiB.
func kb(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/1024) }
