package app

import (
	"fmt"
	"reflect"
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

func TestRedactedOwnedCopiesOnlyWhatASecretIsIn(t *testing.T) {
	const secret = "s3cr3t-value-that-is-long-enough"
	r := redact.New([]string{"MY_API_TOKEN=" + secret})
	type phase struct{ Notes []string }
	type response struct {
		Phases []phase
		Env    map[string]string
		Any    any
	}
	clean := response{Phases: []phase{{Notes: []string{"fine"}}}, Env: map[string]string{"K": "v"}, Any: []string{"x"}}
	if got := redactedOwned(r, clean); &got.Phases[0] != &clean.Phases[0] {
		t.Error("a value without a secret was copied")
	}
	for name, v := range map[string]response{
		"in a slice of a slice": {Phases: []phase{{Notes: []string{"a", "use " + secret}}}},
		"in a map's value":      {Env: map[string]string{"K": secret}},
		"in a map's key":        {Env: map[string]string{secret: "v"}},
		"behind an interface":   {Any: []string{secret}},
	} {
		got := redactedOwned(r, v)
		if want := redacted(r, v); !reflect.DeepEqual(got, want) || strings.Contains(fmt.Sprint(got), secret) {
			t.Errorf("%s: %+v, redacted gives %+v", name, got, want)
		}
	}
}

func TestRedactedOwnedFindsASecretBehindFieldsWithoutStrings(t *testing.T) {
	const secret = "s3cr3t-value-that-is-long-enough"
	r := redact.New([]string{"MY_API_TOKEN=" + secret})
	type firing struct {
		At    time.Time
		Codes []int
		Note  string
	}
	type response struct {
		Codes  []int
		Cost   float64
		Fired  []firing
		Chain  *chainNode
		hidden string
	}
	clean := response{Codes: []int{1}, Fired: []firing{{Note: "pending"}, {Note: "pending"}}, Chain: &chainNode{Next: &chainNode{Label: "x"}}, hidden: secret}
	if got := redactedOwned(r, clean); &got.Fired[0] != &clean.Fired[0] {
		t.Error("a value without a secret in its exported fields was copied")
	}
	for name, v := range map[string]response{
		"after a string seen clean":   {Fired: []firing{{Note: "pending"}, {Note: "pending"}, {Note: "use " + secret}}},
		"in a type that holds itself": {Chain: &chainNode{Next: &chainNode{Next: &chainNode{Label: secret}}}},
	} {
		got := redactedOwned(r, v)
		text := fmt.Sprint(got.Fired) + chainText(got.Chain)
		if !strings.Contains(fmt.Sprint(v.Fired)+chainText(v.Chain), secret) || strings.Contains(text, secret) {
			t.Errorf("%s: not redacted: %+v", name, got)
		}
	}
}

// chainNode is a type that holds itself.
type chainNode struct {
	Next  *chainNode
	Count int
	Label string
}

func chainText(n *chainNode) string {
	text := ""
	for ; n != nil; n = n.Next {
		text += n.Label
	}
	return text
}
