package temporal_test

import (
	"os"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/cachetest"
)

// TestMain gives the tests a user cache folder of their own: the plan
// cache and the git-ignored cache of the pipelines they run are not the
// user's (see package cachetest).
func TestMain(m *testing.M) { os.Exit(cachetest.Main(m)) }
