package app

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/redact"
)

func TestRedactedCopiesEveryStringAndLeavesTheOriginal(t *testing.T) {
	const secret = "s3cr3t-value-that-is-long-enough"
	r := redact.New([]string{"MY_API_TOKEN=" + secret})
	type inner struct {
		Notes []string          `json:"notes"`
		Env   map[string]string `json:"env"`
	}
	type response struct {
		Note  string    `json:"note"`
		At    time.Time `json:"at"`
		In    *inner    `json:"in"`
		Any   any       `json:"any"`
		Count int       `json:"count"`
	}
	notes := []string{"use " + secret}
	v := response{Note: "token " + secret, At: time.Unix(5, 0), In: &inner{Notes: notes, Env: map[string]string{"K": secret}},
		Any: map[string]any{"x": []string{secret}}, Count: 3}
	got := redacted(r, v)
	for _, s := range []string{got.Note, got.In.Notes[0], got.In.Env["K"], got.Any.(map[string]any)["x"].([]string)[0]} {
		if strings.Contains(s, secret) {
			t.Errorf("not redacted: %q", s)
		}
	}
	if got.Count != 3 || !got.At.Equal(v.At) {
		t.Errorf("non-strings changed: %+v", got)
	}
	if notes[0] != "use "+secret || !strings.Contains(v.Note, secret) {
		t.Errorf("the original was changed: %q %q", notes[0], v.Note)
	}
}
