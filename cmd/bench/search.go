package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcriptgen"
)

var (
	searchOnly    = flag.Bool("search", false, "measure only pipeline search: indexing -search-bytes of generated transcripts, then queries over that index")
	searchBytes   = flag.Int64("search-bytes", 1<<30, "bytes of transcripts for -search")
	searchQueries = flag.Int("search-queries", 300, "queries for the -search latency figures; a tenth of them through the binary")
)

// sessionBytes is the size of one generated session's transcripts: two
// phases of two attempts each, 5 MB a file.
const sessionBytes = 20 << 20

// searchFigures writes total bytes of transcripts as sessions of a store
// in work, indexes them (in this process, as the first pipeline search
// does), then measures queries: in this process (the index alone), and
// through the binary (what a user waits for: start-up, the check for
// anything new across every file, the query).
func searchFigures(pipeline, work string, total int64, queries int) {
	root := filepath.Join(work, ".pipeline")
	st, err := store.Open(root)
	check(err)
	defer st.Close()
	fmt.Printf("pipeline search bench: %d cores, files in %s\n\n", numCPU(), work)

	start := time.Now()
	sessions, files := 0, 0
	var written int64
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
	fmt.Printf("1. generated %s of stream-json transcripts: %d sessions, %d files, in %s\n\n", mb(written), sessions, files, ms(time.Since(start)))

	ctx := context.Background()
	ix, err := search.Open(st, search.Options{Warn: os.Stderr})
	check(err)
	start = time.Now()
	stats, err := ix.Update(ctx)
	check(err)
	took := time.Since(start)
	info, err := os.Stat(search.Path(root))
	check(err)
	fmt.Printf("2. indexing (the first search): %s in %s: %.1f MB/s; %d documents; index.db %s (%.0f%% of the text); peak memory %s\n",
		mb(stats.Bytes), ms(took), float64(stats.Bytes)/1e6/took.Seconds(), stats.Chunks, mb(info.Size()),
		100*float64(info.Size())/float64(stats.Bytes), peakRSS())
	start = time.Now()
	again, err := ix.Update(ctx)
	check(err)
	fmt.Printf("   a search's check for anything new (%d sessions, %d files, nothing new: %d bytes): %s\n\n",
		again.Sessions, files, again.Bytes, ms(time.Since(start)))

	qs := benchQueries(queries)
	fmt.Printf("3. queries over that index: %d, varied (common, middling and rare words, two words, phrases; a fifth with --phase)\n", len(qs))
	fmt.Printf("   %-42s %9s %9s %9s   %s\n", "", "p50", "p99", "max", "hits (mean)")
	byClass := map[string][]time.Duration{}
	var all []time.Duration
	hits := map[string]int{}
	for _, q := range qs {
		start := time.Now()
		found, err := ix.Find(ctx, q.query)
		check(err)
		d := time.Since(start)
		byClass[q.class] = append(byClass[q.class], d)
		all = append(all, d)
		hits[q.class] += len(found)
	}
	for _, class := range queryClasses {
		printDurations("   "+class, byClass[class], fmt.Sprintf("  %.1f", float64(hits[class])/float64(len(byClass[class]))))
	}
	printDurations("   all, in this process (the index alone)", all, "  (target: p50 under 50 ms)")
	check(ix.Close())

	// Through the binary: a tenth of the queries, of every class.
	var viaBinary []time.Duration
	for i, q := range qs {
		if i%10 != (i/10)%10 {
			continue
		}
		args := []string{"search", "--state-dir", root, "-o", "json", q.query.Text}
		if q.query.Phase != "" {
			args = append(args, "--phase", q.query.Phase)
		}
		start := time.Now()
		out, err := exec.Command(pipeline, args...).CombinedOutput()
		if err != nil {
			check(fmt.Errorf("pipeline %s: %v: %s", strings.Join(args, " "), err, out))
		}
		viaBinary = append(viaBinary, time.Since(start))
	}
	printDurations("   pipeline search (the binary, start to end)", viaBinary, "")
	fmt.Println()
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

// peakRSS is this process's peak resident memory (VmHWM), or "?".
func peakRSS() string {
	content, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(content), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "?"
}
