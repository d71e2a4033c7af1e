package spec

import (
	"strings"
	"testing"
)

// compact_when came after sessions had recorded digests: a plan that does
// not set it must keep the digest it had, so the built-in defaults the
// digest covers leave it out when nobody sets it.
func TestBuiltInDefaultsWithoutCompactWhen(t *testing.T) {
	if got := string(builtInDefaults()); strings.Contains(got, "compact") {
		t.Errorf("the built-in defaults of the digest name compaction: %s", got)
	}
}
