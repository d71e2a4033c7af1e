package main

import "github.com/pipeline-dev/pipeline/internal/testwait"

// awaitWritten waits until ok says yes, asking it again each time a file
// under root is made, written or removed (testwait.Written).
var awaitWritten = testwait.Written
