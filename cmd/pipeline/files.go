package main

import "github.com/pipeline-dev/pipeline/internal/atomicfile"

// writeFileAtomic writes the file at path whole or not at all (see
// atomicfile.Write).
var writeFileAtomic = atomicfile.Write
