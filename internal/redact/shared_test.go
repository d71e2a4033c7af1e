package redact

import "testing"

// Redactors of the same secrets share one matcher, which a later New of
// other secrets does not change; each redacts its own secrets.
func TestRedactorsOfTheSameSecretsShareTheirMatcher(t *testing.T) {
	env := []string{"API_TOKEN=s3cr3t-value-one", "HOME=/home/x"}
	other := []string{"API_TOKEN=an0ther-value-two"}
	a, b := New(env), New(env)
	if a.load() != b.load() {
		t.Fatal("two Redactors of the same environment built two matchers")
	}
	c := New(other)
	if c.load() == a.load() {
		t.Fatal("a Redactor of other secrets shares the first ones' matcher")
	}
	if d, e := New(env), New(env); d.load() != e.load() {
		t.Fatal("after another environment, the first one's Redactors do not share a matcher")
	}
	for _, tt := range []struct {
		r        *Redactor
		in, want string
	}{
		{a, "x s3cr3t-value-one an0ther-value-two", "x [REDACTED:API_TOKEN] an0ther-value-two"},
		{b, "s3cr3t-value-one", "[REDACTED:API_TOKEN]"},
		{c, "s3cr3t-value-one an0ther-value-two", "s3cr3t-value-one [REDACTED:API_TOKEN]"},
	} {
		if got := tt.r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if New([]string{"HOME=/home/x"}).load() != defaultRedactMatcher.Get() {
		t.Error("a Redactor of no secrets does not share the key patterns' matcher")
	}
	// AddSecret makes a matcher of the Redactor's own, not the shared one.
	a.AddSecret("added-later-123")
	if got := b.String("added-later-123"); got != "added-later-123" {
		t.Errorf("a secret added to one Redactor redacted by another: %q", got)
	}
	if got := a.String("added-later-123"); got != "[REDACTED]" {
		t.Errorf("AddSecret: %q", got)
	}
}
