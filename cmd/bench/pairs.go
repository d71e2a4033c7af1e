package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

var (
	pairsOnly   = flag.Bool("pairs", false, "pipeline run of one true step, -pipeline and -startup-against in pairs whose order alternates (-startup-runs pairs a round): wall p25/p50/p75 and CPU p50 of each, and the difference, each round with its load")
	pairsRounds = flag.Int("pairs-rounds", 3, "rounds of -pairs")
)

// pairsFigures times pipeline run of one true step by pipeline and
// against, run one after the other in pairs whose order alternates, so
// that neither is always the one that runs after the other (a figure
// in turns of a fixed order, as -startup's, leans by a tenth of a
// millisecond or two towards one of them). Each binary is a copy written
// by one write(2) (stateWritten), each with a store of its own on the
// same disk, warmed by three runs.
func pairsFigures(pipeline, against, work string, runs, rounds int) {
	if against == "" {
		check(fmt.Errorf("-pairs needs -startup-against, the build to compare with"))
	}
	fmt.Printf("pipeline bench -pairs: pipeline run of one step (run: \"true\"), %d pairs a round, files in %s\n", runs, work)
	binaries := []string{writtenCopy(work, pipeline), writtenCopy(work, against)}
	dirs := make([]string, len(binaries))
	for i, binary := range binaries {
		dirs[i] = filepath.Join(work, fmt.Sprintf("pairs-%d", i))
		check(os.MkdirAll(dirs[i], 0o755))
		check(os.WriteFile(filepath.Join(dirs[i], "phases.yaml"), []byte(startupYAML), 0o644))
		for range 3 {
			runIn(dirs[i], binary, "run", "phases.yaml")
		}
	}
	for range rounds {
		load := loadAverage()
		var wall, cpu [2][]time.Duration
		for n := range runs {
			for k := range 2 {
				i := k ^ n%2
				cmd := exec.Command(binaries[i], "run", "phases.yaml")
				cmd.Dir = dirs[i]
				d, _, err := timed(cmd)
				check(err)
				c, _ := usage(cmd)
				wall[i], cpu[i] = append(wall[i], d), append(cpu[i], c)
			}
		}
		for i := range 2 {
			slices.Sort(wall[i])
			slices.Sort(cpu[i])
		}
		fmt.Printf("   load %s: this build p25 %v p50 %v p75 %v CPU p50 %v; the other p25 %v p50 %v p75 %v CPU p50 %v; difference p25 %+v p50 %+v p75 %+v CPU p50 %+v\n", load,
			pct(wall[0], 25), pct(wall[0], 50), pct(wall[0], 75), pct(cpu[0], 50),
			pct(wall[1], 25), pct(wall[1], 50), pct(wall[1], 75), pct(cpu[1], 50),
			pct(wall[0], 25)-pct(wall[1], 25), pct(wall[0], 50)-pct(wall[1], 50), pct(wall[0], 75)-pct(wall[1], 75), pct(cpu[0], 50)-pct(cpu[1], 50))
	}
	loadLine("after")
}
