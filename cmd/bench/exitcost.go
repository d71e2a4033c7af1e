package main

import "flag"

var exitCostOnly = flag.Bool("exitcost", false, "time a Go program's exit (its last instruction to its parent's wait returning) by the threads and the memory it holds, in turns, and count what pipeline run and --version hold as they exit (Linux)")
