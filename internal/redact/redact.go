// Package redact hides secrets (the values of secret-looking environment
// variables and known key patterns) in text and in streams of output, before
// anything is written to a file or shown. A secret value is also found
// encoded: with JSON or URL escapes in any of its bytes, and in base64.
//
// Known limits: a secret wrapped across lines (a line break or a
// continuation inside it), split by other text (a terminal escape
// sequence, say), or encoded in a way not listed (hex, HTML entities,
// base64 with line breaks, twice encoded) is not found; in base64, the one
// to three characters that a secret shares with the bytes next to it
// stay. The notes at the top of redact.go say how each kind is found.
package redact

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// Redaction of secrets from step output, before any of it is written to a
// transcript, an event log, a state file or the screen.
//
// Two kinds of secret are recognised:
//
//   - environment secrets: the values of variables whose names look like
//     secrets (see secretName and plausibleSecret), and values given to
//     AddSecret. They are replaced by "[REDACTED:NAME]" ("[REDACTED]" for
//     AddSecret), so that a reader knows what was hidden.
//   - key patterns, redacted wherever they appear: OpenAI/Anthropic "sk-"
//     keys, GitHub, AWS, Slack, Google, GitLab and Stripe tokens, JWTs,
//     PEM private key blocks and the token after "Bearer ". They are
//     replaced by "[REDACTED]".
//
// The hot path is clean output. Every secret and every pattern has a
// literal: the secret value itself, or an anchor such as "ghp_". Each
// literal is found through one of its bytes — the rarest for a secret, a
// hand-picked one for the anchors (see redactRule.scan, and alt: of two,
// the rarer in a sample of the chunk) — and the literals are grouped by
// that byte, so that a chunk is swept once per group with
// bytes.IndexByte, the vectorised search that bytes.Index itself starts
// with; hits close together are found eight bytes at a time, without a
// call each. (bytes.Index on the anchors as they are would fall
// back to a byte-by-byte compare: "sk-" and "eyJ" start with bytes found
// every few bytes of text, and each ran at about 1 GB/s on log lines on
// its own.) A hit is turned away by a look at its neighbour bytes before
// any literal is compared; only an anchor found whole, at a word boundary,
// costs a regular expression (RE2), and that only on the run of token
// characters that follows it. A chunk with no match is returned as it is,
// without a copy.
//
// Every match is decided within redactMaxHold bytes of its start: a longer
// token or an unterminated private key block is cut there. String and
// Stream follow the same rules, so that streaming a text in chunks
// of any size gives exactly what String gives for the whole of it.
//
// Encoded secrets. A secret value is also found
//
//   - escaped, in any mix of its bytes: JSON and JavaScript string escapes
//     (\/, \", \n, \u002d or \u002D, a surrogate pair, \x2d) and URL
//     percent-encoding (%2D or %2d, "+" for a space). Each such match holds
//     an escape, whose first byte ('\\', '%' or '+') is swept for; from
//     there the match is followed back over the value's bytes as they are
//     and forward over escapes and bytes (see encodedMatcher);
//   - in base64, standard and URL alphabets, padded or not, and inside a
//     longer base64 text ("user:password" in an Authorization: Basic
//     header): the characters that depend on the value alone, at each of
//     the three offsets (modulo 3) the value can start at, are literals of
//     their own (see base64Cores), which escapes are also followed in.
//
// What is not found: a secret that the output splits (a line wrap inside
// it, a terminal escape sequence between its characters) or encodes
// otherwise (hex, HTML entities, base64 wrapped over lines, twice
// encoded); passwords inside URLs ("postgres://user:pass@host") unless
// the variable holding them has a secret's name; "Authorization: Basic"
// with an unknown password, and "bearer" in lower case unless its token
// matches a pattern.

// redactMaxHold is the longest match: a private key block with no END line
// within it, or a token longer than it, is redacted up to here. It bounds
// what a Stream holds back.
const redactMaxHold = 16 << 10

// minSecretLen is the shortest environment value taken as a secret:
// shorter ones are too likely to turn up in ordinary text.
const minSecretLen = 8

// secretPiece is the most bytes of a secret looked for as one literal: a
// longer value is looked for in pieces side by side, each replaced on its
// own. An escaped piece is at most 6 times as long (\u002d for "-"), and
// must fit in what a Stream may hold back.
const secretPiece = 2 << 10

// minBase64Len is the shortest base64 text of a secret looked for.
const minBase64Len = 8

// Redactor finds secrets in output and replaces them. Build one with
// New; the zero Redactor and a nil *Redactor redact the key
// patterns only. A Redactor is safe for concurrent use, AddSecret
// included.
type Redactor struct {
	mu sync.Mutex // serialises AddSecret
	m  atomic.Pointer[redactMatcher]
}

// New returns a Redactor for the key patterns and for the secret
// values of environ, given as os.Environ gives it ("KEY=value").
//
// A variable is a secret when its name contains (in any case) KEY, TOKEN,
// SECRET, PASSWORD, PASSWD, PASS, CREDENTIAL, AUTH, PRIVATE, SESSION or
// COOKIE, unless the word is only part of a well-known harmless name
// (KEYBOARD, AUTHOR, BYPASS, ASKPASS, TOKENIZER, ...), the name is a
// known non-secret (GOPRIVATE, GOAUTH, SSH_AUTH_SOCK, XDG_SESSION_*, ...),
// or the name says it holds a location or a setting rather than the
// secret (..._FILE, ..._PATH, ..._DIR, ..._USER, ..._HOST, ...). Of those,
// a value is used only when it is at least 8 bytes long, is not a path
// ("/...", "~/...", "./...") and is not a common word ("production",
// "disabled", ...). A value with several lines is also looked for line by
// line, one with surrounding space also without it, and each also
// escaped (JSON, JavaScript, URL) and in base64 (see the rules above).
func New(environ []string) *Redactor {
	var secs []secretLiteral
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !secretName(name) || !plausibleSecret(value) {
			continue
		}
		secs = appendSecret(secs, name, value, true)
	}
	r := &Redactor{}
	r.m.Store(matcherFor(secs))
	return r
}

// lastBuilt is the matcher New built last and the secrets it was built
// of. A matcher never changes once built, so Redactors of the same
// secrets share one: a run builds its session's redactor and its view's
// from the same environment, and a build costs some 40 KB and 50 µs (1 %
// of the CPU of pipeline run of one true step, perf).
var lastBuilt struct {
	mu   sync.Mutex
	secs []secretLiteral
	m    *redactMatcher
}

// matcherFor is the matcher of secs and the key patterns.
func matcherFor(secs []secretLiteral) *redactMatcher {
	if len(secs) == 0 {
		return defaultRedactMatcher.Get()
	}
	lastBuilt.mu.Lock()
	defer lastBuilt.mu.Unlock()
	if lastBuilt.m == nil || !slices.Equal(lastBuilt.secs, secs) {
		lastBuilt.secs, lastBuilt.m = secs, buildRedactMatcher(secs)
	}
	return lastBuilt.m
}

// AddSecret adds a value known to be secret by other means; it is
// replaced by "[REDACTED]". Any non-empty value is taken, however short.
// Streams already open see it from their next Write. On a nil Redactor
// AddSecret does nothing.
func (r *Redactor) AddSecret(value string) {
	if r == nil || value == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.load()
	secs := appendSecret(slices.Clip(old.secrets), "", value, false)
	r.m.Store(buildRedactMatcher(secs))
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	m := r.load()
	var sc redactScratch
	b := []byte(s)
	m.scan(b, 0, true, &sc)
	if len(sc.matches) == 0 {
		return s
	}
	return string(renderRedacted(make([]byte, 0, len(s)+64), b, sc.matches))
}

func (r *Redactor) load() *redactMatcher {
	if r != nil {
		if m := r.m.Load(); m != nil {
			return m
		}
	}
	return defaultRedactMatcher.Get()
}

// NewStream returns a stream that redacts one output (a step's stdout, say)
// chunk by chunk.
func (r *Redactor) NewStream() *Stream { return &Stream{r: r} }

// Stream redacts a stream of chunks split anywhere, a secret split
// across chunks included: Write returns what is safe to emit now and holds
// back a tail only while it could be the start of a secret — a prefix of
// a secret value or of a pattern's anchor, an escape ("%", "\u00") or an
// escaped secret begun, or a pattern match still in progress — so that
// interactive output is not delayed otherwise. What it
// holds is always less than 16 KiB: a private key block with no END line
// within 16 KiB of its BEGIN line is redacted up to there. The
// concatenation of everything Write and Flush return equals String of the
// concatenated input.
//
// A Stream is not safe for concurrent use; a nil *Redactor's stream
// redacts the key patterns.
type Stream struct {
	r    *Redactor
	hold []byte // input held back, not yet emitted
	work []byte // hold + chunk, when something is held
	out  []byte // redacted output
	prev byte   // the input byte before hold (0 at the start)
	sc   redactScratch
}

// Write takes the next chunk of the stream and returns the redacted bytes
// that are safe to emit now. The result may alias chunk or a buffer of the
// stream; it is valid until the next call of Write or Flush, and the
// caller must not modify it.
func (s *Stream) Write(chunk []byte) []byte {
	if len(chunk) == 0 {
		return nil
	}
	buf := chunk
	if len(s.hold) > 0 {
		s.work = append(append(s.work[:0], s.hold...), chunk...)
		buf = s.work
	}
	return s.emit(buf, false)
}

// Flush ends the stream: it returns the redacted rest of what was held
// back, with the same validity as Write's result. The stream may then be
// used for a new stream.
func (s *Stream) Flush() []byte {
	if len(s.hold) == 0 {
		s.prev = 0
		return nil
	}
	out := s.emit(s.hold, true)
	s.prev = 0
	return out
}

func (s *Stream) emit(buf []byte, final bool) []byte {
	cut := s.r.load().scan(buf, s.prev, final, &s.sc)
	res := buf[:cut]
	if len(s.sc.matches) > 0 {
		s.out = renderRedacted(s.out[:0], res, s.sc.matches)
		res = s.out
	}
	if cut > 0 {
		s.prev = buf[cut-1]
	}
	// hold and buf never share an array: buf is the caller's chunk, work
	// or (in Flush, where nothing is left) hold itself.
	s.hold = append(s.hold[:0], buf[cut:]...)
	return res
}

// renderRedacted appends buf to dst with the matches replaced.
func renderRedacted(dst, buf []byte, matches []redaction) []byte {
	pos := 0
	for _, m := range matches {
		dst = append(dst, buf[pos:m.start+m.keep]...)
		dst = append(dst, m.repl...)
		pos = m.end
	}
	return append(dst, buf[pos:]...)
}

// ---- Environment secrets ----

// secretWords mark a variable name as a secret's.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "AUTH", "PRIVATE", "SESSION", "COOKIE"}

// harmlessWords contain a secret word without being about a secret; they
// are removed from a name before secretWords are looked for. AUTHOR is
// handled apart, for AUTHORIZATION is a secret.
var harmlessWords = []string{"KEYBOARD", "KEYMAP", "KEYTIMEOUT", "MONKEY", "HOTKEY", "BYPASS", "COMPASS", "PASSIVE", "PASSTHRU", "PASSTHROUGH", "ASKPASS", "TOKENIZER"}

// harmlessName tells the well-known variables that match secretWords but hold no
// secret: module patterns, an auth helper command, agent sockets and the
// desktop session.
func harmlessName(name string) bool {
	switch name {
	case "GOPRIVATE", "GOAUTH", "GONOSUMDB", "GONOPROXY",
		"SSH_AUTH_SOCK", "XAUTHORITY", "GPG_AGENT_INFO",
		"SESSION_MANAGER", "DESKTOP_SESSION", "TERM_SESSION_ID":
		return true
	}
	return false
}

// harmlessPrefixes and harmlessSuffixes mark names of settings: where a
// secret is kept, who uses it, how long it lasts — not the secret.
var (
	harmlessPrefixes = []string{"XDG_", "DBUS_"}
	harmlessSuffixes = []string{"FILE", "PATH", "DIR", "SOCK", "SOCKET", "_PID", "_USER", "_USERNAME", "_NAME", "_EMAIL", "_HOST", "_PORT", "_REGION", "_TYPE", "_MODE", "_TIMEOUT", "_TTL", "_ENABLED"}
)

// SecretName tells whether an environment variable's name says it holds a
// secret (see New), whatever its value.
func SecretName(name string) bool { return secretName(name) }

// Replacement is what a secret of the variable name is replaced by.
func Replacement(name string) string { return "[REDACTED:" + replacementName(name) + "]" }

// secretName tells whether an environment variable's name says it holds a
// secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	if !containsAny(n, secretWords) {
		// What follows only takes words out of n: most names, which
		// hold no secret word, need none of it.
		return false
	}
	if harmlessName(n) {
		return false
	}
	for _, p := range harmlessPrefixes {
		if strings.HasPrefix(n, p) {
			return false
		}
	}
	for _, sfx := range harmlessSuffixes {
		if strings.HasSuffix(n, sfx) {
			return false
		}
	}
	for _, w := range harmlessWords {
		n = strings.ReplaceAll(n, w, "_")
	}
	// AUTHOR (GIT_AUTHOR_NAME, XAUTHORITY) but not AUTHORIZATION.
	for i := strings.Index(n, "AUTHOR"); i >= 0; i = strings.Index(n, "AUTHOR") {
		if rest := n[i+len("AUTHOR"):]; strings.HasPrefix(rest, "IZ") || strings.HasPrefix(rest, "IS") {
			n = n[:i] + "AUTH_" + rest // keep its AUTH
			continue
		}
		n = n[:i] + "_" + n[i+len("AUTHOR"):]
	}
	return containsAny(n, secretWords)
}

// containsAny tells whether s contains one of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// commonSettingValue tells the words that settings take; taken as secrets they would
// blank ordinary text.
func commonSettingValue(word string) bool {
	switch word {
	case "true", "false", "enabled", "disabled", "required",
		"optional", "default", "undefined", "production",
		"development", "staging", "localhost", "automatic",
		"password", "changeme", "redacted", "[redacted]",
		"anonymous", "none", "null":
		return true
	}
	return false
}

// plausibleSecret tells whether an environment value can be a secret worth
// looking for in output.
func plausibleSecret(v string) bool {
	t := strings.TrimSpace(v)
	if len(t) < minSecretLen {
		return false
	}
	if t[0] == '/' || strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") {
		return false
	}
	return !commonSettingValue(strings.ToLower(t))
}

// secretLiteral is one literal to find, with the name of its variable
// ("" for AddSecret). encoded: it is also looked for with escapes.
type secretLiteral struct {
	name, value string
	encoded     bool
}

// appendSecret appends the literals of a value: the value, the value
// without surrounding space, each line of a multi-line value; each of
// those also as JSON encodes it and in base64 (see base64Cores); each in
// pieces of at most secretPiece bytes. Variants other than the value
// itself must pass plausibleSecret when env is set, and be at least
// minSecretLen long otherwise.
func appendSecret(secs []secretLiteral, name, value string, env bool) []secretLiteral {
	ok := func(v string) bool {
		if env {
			return plausibleSecret(v)
		}
		return len(v) >= minSecretLen
	}
	piece := func(v string, encoded bool) {
		// Pieces side by side, so that each match ends where the next
		// piece starts; cut between characters, so that an escaped
		// character is never split.
		n := (len(v) + secretPiece - 1) / secretPiece
		for ; n > 1; n-- {
			cut := len(v) / n
			for cut < len(v) && !utf8.RuneStart(v[cut]) && cut-len(v)/n < utf8.UTFMax {
				cut++
			}
			secs = append(secs, secretLiteral{name, v[:cut], encoded})
			v = v[cut:]
		}
		secs = append(secs, secretLiteral{name, v, encoded})
	}
	add := func(v string) {
		piece(v, true)
		// As a JSON string has it (event logs and state are JSON), with
		// and without the escapes of <, > and &. Other escapes are found
		// by following them; these are literals because encoding/json
		// also turns invalid UTF-8 into \ufffd.
		for _, html := range []bool{true, false} {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(v) == nil {
				if j := strings.TrimSuffix(b.String(), "\n"); len(j) >= 2 && j[1:len(j)-1] != v {
					piece(j[1:len(j)-1], false)
				}
			}
		}
		for _, b := range base64Cores(v) {
			piece(b, true)
		}
	}
	add(value)
	if t := strings.TrimSpace(value); t != value && ok(t) {
		add(t)
	}
	if strings.ContainsAny(strings.TrimSpace(value), "\r\n") {
		for _, line := range strings.FieldsFunc(value, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if t := strings.TrimSpace(line); ok(t) {
				add(t)
			}
		}
	}
	return secs
}

// base64Cores returns the texts that v gives in base64, in the standard
// and the URL alphabets, wherever it sits in the encoded data: each of the
// three offsets (modulo 3) v can start at gives other characters. Only the
// characters whose six bits all come from v are kept: at offset 1 the
// first two characters also hold bits of the byte before v, at offset 2
// the first three, and when v does not end a group of three bytes the
// last character holds bits of what follows (or is followed by padding).
// Every base64 text of data holding v, padded or not, has one of them.
func base64Cores(v string) []string {
	var cores []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for offset, skip := range [3]int{0, 2, 3} {
			data := make([]byte, offset+len(v))
			copy(data[offset:], v)
			text := enc.EncodeToString(data)
			end := len(text)
			if len(data)%3 != 0 {
				end--
			}
			if end-skip >= minBase64Len && !slices.Contains(cores, text[skip:end]) {
				cores = append(cores, text[skip:end])
			}
		}
	}
	return cores
}

// replacementName is a variable's name as a replacement shows it: only
// letters, digits and "_.-", so that the replacement is safe in JSON, YAML
// and a terminal whatever the name.
func replacementName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !isASCIIAlnum(c) && c != '_' && c != '.' && c != '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// ---- Key patterns ----

// redactRule is a key pattern: anchors to find, then a regular expression
// tried on the run of token characters that follows an anchor.
type redactRule struct {
	name    string
	anchors []string
	// scan is the byte of every anchor that a chunk is swept for. The
	// anchors have no rare byte, so scan is chosen to share sweeps: 'k'
	// for the "sk"/"rk" keys and 'g' for GitHub and GitLab (each a few
	// per 1000 bytes of log text), and the upper-case and rare letters 'A',
	// 'x', 'J' and 'B' for the rest. Never '-', '_' or a vowel: dates,
	// identifiers and words put one in every few bytes (but see alt).
	scan byte
	// alt, when set, is the byte swept for instead of scan in a chunk
	// where it is the rarer ('-' and '_' where 'k' is common: "worker",
	// "took", "ok"), as a sample of the chunk says (see chooseScan).
	alt byte
	// boundary: the byte before the anchor must not be a letter or a digit
	// ("task-" is not "sk-").
	boundary bool
	// lead is skipped after the anchor (the spaces after "Bearer"), then
	// body is the run of token characters the expression is tried on; at
	// most maxBody of them when maxBody > 0.
	lead, body *[256]bool
	maxBody    int
	re         func() *regexp.Regexp
	// accept vets a match and says how many of its bytes to keep.
	accept func(m []byte) (keep int, ok bool)
	// custom replaces all of the above (private key blocks).
	custom func(buf []byte, s int, final bool) (end int, st matchStatus)
}

type matchStatus int8

const (
	matchNone      matchStatus = iota // no match here
	matchFound                        // a match, final whatever follows
	matchUndecided                    // the answer depends on bytes not seen yet
)

func tokenClass(spec string) *[256]bool {
	var t [256]bool
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for c := int(spec[i]); c <= int(spec[i+2]); c++ {
				t[c] = true
			}
			i += 2
			continue
		}
		t[spec[i]] = true
	}
	return &t
}

// redactRules are built on first use (with the matcher): each rule's
// classes and regular expression cost allocations that pipeline --version
// and most commands need not pay.
var redactRules = lazy.Value[[]*redactRule]{New: func() []*redactRule {
	return []*redactRule{
		{name: "openai-anthropic", anchors: []string{"sk-"}, scan: 'k', alt: '-', boundary: true,
			body: tokenClass("A-Za-z0-9_-"), re: lazyRegexp(`^sk-[A-Za-z0-9_-]{20,}`)},
		{name: "stripe", anchors: []string{"sk_live_", "rk_live_"}, scan: 'k', alt: '_', boundary: true,
			body: tokenClass("A-Za-z0-9"), re: lazyRegexp(`^[sr]k_live_[A-Za-z0-9]{16,}`)},
		{name: "github", anchors: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, scan: 'g', alt: '_', boundary: true,
			body: tokenClass("A-Za-z0-9"), re: lazyRegexp(`^gh[pousr]_[A-Za-z0-9]{36,}`)},
		{name: "github-fine-grained", anchors: []string{"github_pat_"}, scan: 'g', alt: '_', boundary: true,
			body: tokenClass("A-Za-z0-9_"), re: lazyRegexp(`^github_pat_[A-Za-z0-9_]{22,}`)},
		{name: "aws", anchors: []string{"AKIA", "ASIA"}, scan: 'A', boundary: true,
			body: tokenClass("A-Z0-9"), maxBody: 16, re: lazyRegexp(`^(?:AKIA|ASIA)[A-Z0-9]{16}`)},
		{name: "slack", anchors: []string{"xox"}, scan: 'x', boundary: true,
			body: tokenClass("A-Za-z0-9-"), re: lazyRegexp(`^xox[abprs]-[A-Za-z0-9-]{10,}`)},
		{name: "google", anchors: []string{"AIza"}, scan: 'A', boundary: true,
			body: tokenClass("A-Za-z0-9_-"), maxBody: 35, re: lazyRegexp(`^AIza[A-Za-z0-9_-]{35}`)},
		{name: "gitlab", anchors: []string{"glpat-"}, scan: 'g', alt: '-', boundary: true,
			body: tokenClass("A-Za-z0-9_-"), re: lazyRegexp(`^glpat-[A-Za-z0-9_-]{20,}`)},
		{name: "jwt", anchors: []string{"eyJ"}, scan: 'J', boundary: true,
			body: tokenClass("A-Za-z0-9_.-"), re: lazyRegexp(`^eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)},
		{name: "bearer", anchors: []string{"Bearer "}, scan: 'B', boundary: true,
			lead: tokenClass(" "), body: tokenClass("A-Za-z0-9._~+/=-"),
			re: lazyRegexp(`^Bearer +[A-Za-z0-9._~+/-]+=*`), accept: acceptBearer},
		{name: "private-key", anchors: []string{"-----BEGIN"}, scan: 'B', custom: matchPrivateKey},
	}
}}

// lazyRegexp compiles expr when a rule's anchor is first found: most
// runs meet none, and compiling the rules at start-up cost every command
// (pipeline --version included) tens of kilobytes of allocations.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var redactedText = []byte("[REDACTED]")

// acceptBearer keeps "Bearer " and redacts the token, unless the "token" is
// a plain lower-case word ("Bearer tokens are ...", "bearer realm=").
func acceptBearer(m []byte) (int, bool) {
	keep := len("Bearer")
	for keep < len(m) && m[keep] == ' ' {
		keep++
	}
	tok := bytes.TrimRight(m[keep:], "=.")
	if len(tok) >= 20 {
		return keep, true
	}
	for _, c := range tok {
		if c < 'a' || c > 'z' {
			return keep, true
		}
	}
	return 0, false
}

// matchAt tries r at buf[s:], where its anchor of length alen is.
func (r *redactRule) matchAt(buf []byte, s, alen int, final bool) (end, keep int, st matchStatus) {
	if r.custom != nil {
		end, st = r.custom(buf, s, final)
		return end, 0, st
	}
	complete := final || len(buf)-s >= redactMaxHold
	lim := min(len(buf), s+redactMaxHold)
	i := s + alen
	if r.lead != nil {
		for i < lim && r.lead[buf[i]] {
			i++
		}
	}
	body := i
	for i < lim && r.body[buf[i]] && (r.maxBody == 0 || i-body < r.maxBody) {
		i++
	}
	if i == lim && !complete && (r.maxBody == 0 || i-body < r.maxBody) {
		return 0, 0, matchUndecided
	}
	// The expression consumes only the anchor, lead and body bytes, so
	// its answer on buf[s:i] is final.
	loc := r.re().FindIndex(buf[s:i])
	if loc == nil {
		return 0, 0, matchNone
	}
	if r.accept != nil {
		var ok bool
		if keep, ok = r.accept(buf[s : s+loc[1]]); !ok {
			return 0, 0, matchNone
		}
	}
	return s + loc[1], keep, matchFound
}

var (
	// The two classes are built on first use, not by a package init.
	pemLabel = lazy.Value[*[256]bool]{New: func() *[256]bool { return tokenClass("A-Z0-9 ") }}
	// pemBody: base64, line breaks and indentation, the characters of
	// "Proc-Type: 4,ENCRYPTED" and "DEK-Info: AES-128-CBC,..." lines, and
	// the backslash of a JSON-encoded line break.
	pemBody       = lazy.Value[*[256]bool]{New: func() *[256]bool { return tokenClass("A-Za-z0-9+/=:,\\ \t\r\n-") }}
	pemDashes     = []byte("-----")
	pemEnd        = []byte("-----END")
	pemPrivateKey = []byte("PRIVATE KEY")
)

// matchPrivateKey matches a "-----BEGIN ... PRIVATE KEY-----" line and the
// key's body after it, through the first "-----END ... PRIVATE KEY-----"
// line. A block with no END line ends where its body does (at the first
// byte that cannot be part of it: a quote, a period), at the end of the
// input, or redactMaxHold bytes after its start, whichever comes first; it does
// not end with the backslash of an escape, so that a JSON document stays
// one.
func matchPrivateKey(buf []byte, s int, final bool) (int, matchStatus) {
	complete := final || len(buf)-s >= redactMaxHold
	lim := min(len(buf), s+redactMaxHold)
	labelClass, bodyClass := pemLabel.Get(), pemBody.Get()
	// label reads "[A-Z0-9 ]*-----" from i: the end of the dashes, and
	// whether the label is whole or cut by lim.
	label := func(i int) (end int, whole, cut bool) {
		from := i
		for i < lim && i-from < 128 && labelClass[buf[i]] {
			i++
		}
		n := min(len(pemDashes), lim-i)
		if !bytes.Equal(buf[i:i+n], pemDashes[:n]) {
			return 0, false, false
		}
		if n < len(pemDashes) {
			return 0, false, true
		}
		return i + n, true, false
	}
	hdr, whole, cut := label(s + len("-----BEGIN"))
	if cut && !complete {
		return 0, matchUndecided
	}
	if !whole || !bytes.Contains(buf[s:hdr], pemPrivateKey) {
		return 0, matchNone
	}
	end := hdr
	for end < lim && bodyClass[buf[end]] {
		end++
	}
	// An END line is made of body bytes: look for it within the body.
	for j := hdr; ; {
		k := bytes.Index(buf[j:end], pemEnd)
		if k < 0 {
			break
		}
		e, whole, cut := label(j + k + len(pemEnd))
		if cut {
			break // the END line runs past what there is
		}
		if whole && bytes.Contains(buf[j+k:e], pemPrivateKey) {
			return e, matchFound
		}
		j += k + 1
	}
	if end == lim && !complete {
		return 0, matchUndecided
	}
	// Not the backslash of an escape: what follows would lose it. (Cut
	// after the backslash, an escape leaves plain letters.)
	for end > hdr && buf[end-1] == '\\' {
		end--
	}
	return end, matchFound
}

// ---- The matcher ----

// redactLiteral is a byte string to find: a secret value, or a rule's
// anchor (rule set).
type redactLiteral struct {
	text []byte
	repl []byte
	rule *redactRule
}

// redactPass is one sweep of a chunk for a byte, and the literals found
// through it. Most hits of the byte are in ordinary words ("task" for 'k' of
// "sk-"), and are turned away by a look at the bytes on either side of it
// before any literal is compared: before and after are the bytes there in
// some literal, when every literal has one there.
type redactPass struct {
	b    byte
	lits []passLiteral
	// anchor: b starts escapes, where the encodedMatcher looks for
	// escaped secrets.
	anchor        bool
	checkBefore   bool
	checkAfter    bool
	before, after byteSet
}

// byteSet is a set of bytes, a bit each: a pass's neighbours in 64 bytes
// where two [256]bool took 512. The matcher every run builds allocated
// 24 KB, now 8.7 KB: heap pages each run touched for the first time.
type byteSet [4]uint64

func (s *byteSet) add(c byte) { s[c>>6] |= 1 << (c & 63) }

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// passLiteral is a literal that has its pass's byte at off.
type passLiteral struct {
	text []byte
	off  int
	lit  int32
	// boundary: the byte before the literal must not be alphanumeric.
	boundary bool
}

// redactMatcher is an immutable set of literals and the passes that find
// them.
type redactMatcher struct {
	secrets []secretLiteral
	lits    []redactLiteral
	passes  []redactPass
	// altPasses sweep for the rules' alt bytes instead of their scan
	// bytes; altBytes and scanBytes are those bytes, counted in a sample
	// of a chunk to choose between the two.
	altPasses           []redactPass
	altBytes, scanBytes []byte
	encoded             *encodedMatcher // nil: no literal is looked for escaped
	// inLit marks bytes that occur in some literal: a chunk whose last
	// byte is not one cannot end with the start of a literal.
	inLit [256]bool
}

var defaultRedactMatcher = lazy.Value[*redactMatcher]{New: func() *redactMatcher { return buildRedactMatcher(nil) }}

func buildRedactMatcher(secs []secretLiteral) *redactMatcher {
	m := &redactMatcher{}
	seen := map[string]int{}
	var encoded []int32
	for _, s := range secs {
		if i, ok := seen[s.value]; ok {
			// The first name found for a value wins; escapes are
			// followed when any of its uses asks.
			if s.encoded && !m.secrets[i].encoded {
				m.secrets[i].encoded = true
				encoded = append(encoded, int32(i))
			}
			continue
		}
		seen[s.value] = len(m.secrets)
		m.secrets = append(m.secrets, s)
		repl := "[REDACTED]"
		if s.name != "" {
			repl = Replacement(s.name)
		}
		if s.encoded {
			encoded = append(encoded, int32(len(m.lits)))
		}
		m.lits = append(m.lits, redactLiteral{text: []byte(s.value), repl: []byte(repl)})
	}
	nsecrets := len(m.lits)
	if len(encoded) > 0 {
		m.encoded = newEncodedMatcher(m.lits, encoded)
	}
	for _, r := range redactRules.Get() {
		for _, a := range r.anchors {
			m.lits = append(m.lits, redactLiteral{text: []byte(a), repl: redactedText, rule: r})
		}
	}
	for _, l := range m.lits {
		for _, c := range l.text {
			m.inLit[c] = true
		}
	}
	m.passes = buildPasses(m.lits, nsecrets, m.encoded, func(r *redactRule) byte { return r.scan })
	m.altPasses = buildPasses(m.lits, nsecrets, m.encoded, func(r *redactRule) byte {
		if r.alt != 0 {
			m.altBytes = appendNew(m.altBytes, r.alt)
			m.scanBytes = appendNew(m.scanBytes, r.scan)
			return r.alt
		}
		return r.scan
	})
	return m
}

// buildPasses groups the literals into passes: each anchor through the
// byte scanOf picks of its rule, each secret through its rarest byte or
// a byte already swept for, and the first bytes of escapes.
func buildPasses(lits []redactLiteral, nsecrets int, enc *encodedMatcher, scanOf func(*redactRule) byte) []redactPass {
	// At most a pass a literal and an escape's byte: made once, not
	// grown by copies.
	most := len(lits)
	if enc != nil {
		most += len(enc.anchors)
	}
	passes := make([]redactPass, 0, most)
	byByte := map[byte]int{}
	add := func(li, off int) {
		l := lits[li]
		c := l.text[off]
		pi, ok := byByte[c]
		if !ok {
			pi = len(passes)
			byByte[c] = pi
			passes = append(passes, redactPass{b: c})
		}
		passes[pi].lits = append(passes[pi].lits, passLiteral{
			text: l.text, off: off, lit: int32(li), boundary: l.rule != nil && l.rule.boundary,
		})
	}
	for li := nsecrets; li < len(lits); li++ {
		add(li, bytes.IndexByte(lits[li].text, scanOf(lits[li].rule)))
	}
	if enc != nil {
		// The first bytes of escapes are swept for; a secret may share
		// those sweeps.
		for _, c := range enc.anchors {
			pi, ok := byByte[c]
			if !ok {
				pi = len(passes)
				byByte[c] = pi
				passes = append(passes, redactPass{b: c})
			}
			passes[pi].anchor = true
		}
	}
	// A secret is found through its rarest byte, or through a byte
	// already swept for when that costs less than a sweep of its own.
	freq := redactByteFreq.Get()
	for li := range nsecrets {
		best, bestCost := 0, float32(1e9)
		for off, c := range lits[li].text {
			cost := redactSweepCost + freq[c]
			if _, ok := byByte[c]; ok {
				cost = freq[c] * redactCheckCost
			}
			if cost < bestCost {
				best, bestCost = off, cost
			}
		}
		add(li, best)
	}
	for pi := range passes {
		passes[pi].setNeighbours()
	}
	return passes
}

// setNeighbours sets the bytes a hit of p may have on either side.
func (p *redactPass) setNeighbours() {
	p.checkBefore, p.checkAfter = true, true
	for _, la := range p.lits {
		if la.off > 0 {
			p.before.add(la.text[la.off-1])
		} else {
			p.checkBefore = false
		}
		if la.off+1 < len(la.text) {
			p.after.add(la.text[la.off+1])
		} else {
			p.checkAfter = false
		}
	}
}

// appendNew appends c to set unless it is there.
func appendNew(set []byte, c byte) []byte {
	if bytes.IndexByte(set, c) >= 0 {
		return set
	}
	return append(set, c)
}

// The cost of finding a literal, in bytes.IndexByte restarts per 1000
// bytes swept: a sweep with no hit costs about as much as 1.5 restarts
// per 1000 bytes, and a literal that shares a sweep costs a check, a tenth
// of a restart, at each hit of its byte.
const (
	redactSweepCost = 1.5
	redactCheckCost = 0.1
)

// redactByteFreq is a rough count of each byte per 1000 bytes of log
// output and prose; it needs only to rank bytes well enough to pick rare
// ones.
var redactByteFreq = lazy.Value[*[256]float32]{New: func() *[256]float32 {
	var f [256]float32
	for i := range f {
		f[i] = 0.01 // control bytes
	}
	for i := 0x80; i < 0x100; i++ {
		f[i] = 1
	}
	set := func(v float32, chars string) {
		for i := 0; i < len(chars); i++ {
			f[chars[i]] = v
		}
	}
	set(150, " ")
	set(80, "e")
	set(60, "t")
	set(50, "aoin")
	set(45, "sr")
	set(30, "l0")
	set(25, "hdc1")
	set(20, "u-2")
	set(18, "mp")
	set(15, ".:")
	set(12, "fb\n")
	set(10, "gyw/3456789")
	set(8, "v=")
	set(6, "k,\"")
	set(5, "_")
	set(4, "ETSI")
	set(3, "xARONCZ")
	set(2.5, "DL")
	set(2, "PMG'()[]")
	set(1.5, "FUH")
	set(1, "BWjqz\t{}>`")
	set(0.6, "VY")
	set(0.5, "K<*+#@;")
	set(0.3, "XJ$%&!?|\\")
	set(0.1, "Q~^")
	return &f
}}

// redactCand is a literal found at start.
type redactCand struct {
	start int
	// end, when not 0, is where an escaped literal ends.
	end     int
	lit     int32
	partial bool // the literal is cut by the end of the chunk
}

// redaction replaces buf[start+keep:end] with repl.
type redaction struct {
	start, end, keep int
	repl             []byte
}

// redactScratch holds the slices a scan reuses.
type redactScratch struct {
	cands   []redactCand
	matches []redaction
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// find appends the literals of p found in buf, and for an anchor pass
// the escaped literals that enc finds.
func (p *redactPass) find(buf []byte, prev byte, final bool, enc *encodedMatcher, cands []redactCand) []redactCand {
	pattern := ones * uint64(p.b)
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], p.b)
		if j < 0 {
			return cands
		}
		h := i + j
		for {
			cands = p.hit(buf, h, prev, final, enc, cands)
			// Hits come in clusters (the dashes of a date): the eight
			// bytes after a hit are looked at in one go before
			// IndexByte, whose every call costs as much as a sweep of a
			// few dozen bytes, is called again.
			i = h + 1
			if i+8 > len(buf) {
				break
			}
			m := zeroBytes(binary.LittleEndian.Uint64(buf[i:]) ^ pattern)
			if m == 0 {
				i += 8
				break
			}
			h = i + bits.TrailingZeros64(m)/8
		}
	}
}

// hit appends the literals of p found at h, a byte of the pass, and for
// an anchor pass the escaped literals that enc finds there.
func (p *redactPass) hit(buf []byte, h int, prev byte, final bool, enc *encodedMatcher, cands []redactCand) []redactCand {
	if p.anchor {
		cands = enc.findAt(buf, h, final, cands)
	}
	if p.checkAfter && (h+1 == len(buf) || !p.after.has(buf[h+1])) ||
		p.checkBefore && (h == 0 || !p.before.has(buf[h-1])) {
		return cands // no literal fits (one cut by the end is found apart)
	}
	for k := range p.lits {
		la := &p.lits[k]
		s := h - la.off
		if s < 0 || s+len(la.text) > len(buf) || buf[s] != la.text[0] || !bytes.Equal(buf[s:s+len(la.text)], la.text) {
			continue
		}
		if la.boundary && (s > 0 && isASCIIAlnum(buf[s-1]) || s == 0 && isASCIIAlnum(prev)) {
			continue
		}
		cands = append(cands, redactCand{start: s, lit: la.lit})
	}
	return cands
}

// scan finds the matches in buf into sc.matches and returns how much of buf
// is decided: everything before the cut, as redacted by sc.matches, is what
// the whole input gives there, whatever follows buf. prev is the input
// byte before buf (0 for none); final says nothing follows buf.
//
// Matches are leftmost first; of those starting at the same byte, the
// longest wins, and a secret wins a tie with a pattern.
func (m *redactMatcher) scan(buf []byte, prev byte, final bool, sc *redactScratch) (cut int) {
	cands := sc.cands[:0]
	sc.matches = sc.matches[:0]
	passes := m.chooseScan(buf)
	for pi := range passes {
		cands = passes[pi].find(buf, prev, final, m.encoded, cands)
	}
	// A literal begun at the end of the chunk, to be finished by the next.
	if !final && m.inLit[buf[len(buf)-1]] {
		for li := range m.lits {
			l := &m.lits[li]
			for s := max(0, len(buf)-len(l.text)+1); s < len(buf); s++ {
				if buf[s] != l.text[0] || !bytes.HasPrefix(l.text, buf[s:]) {
					continue
				}
				if l.rule != nil && l.rule.boundary && (s > 0 && isASCIIAlnum(buf[s-1]) || s == 0 && isASCIIAlnum(prev)) {
					continue
				}
				cands = append(cands, redactCand{start: s, lit: int32(li), partial: true})
			}
		}
	}
	sc.cands = cands
	if len(cands) == 0 {
		return len(buf)
	}
	if len(cands) > 1 {
		slices.SortFunc(cands, func(a, b redactCand) int {
			if c := cmp.Compare(a.start, b.start); c != 0 {
				return c
			}
			return cmp.Compare(a.lit, b.lit)
		})
	}
	cur := 0 // the end of the last match
	for i := 0; i < len(cands); {
		s := cands[i].start
		j := i
		for j < len(cands) && cands[j].start == s {
			j++
		}
		if s < cur {
			i = j
			continue
		}
		best := redaction{end: -1}
		for _, c := range cands[i:j] {
			if c.partial {
				return s
			}
			l := &m.lits[c.lit]
			end, keep, st := s+len(l.text), 0, matchFound
			switch {
			case c.end != 0:
				end = c.end
			case l.rule != nil:
				end, keep, st = l.rule.matchAt(buf, s, len(l.text), final)
			}
			if st == matchUndecided {
				return s
			}
			if st == matchFound && end > best.end {
				best = redaction{start: s, end: end, keep: keep, repl: l.repl}
			}
		}
		if best.end >= 0 {
			sc.matches = append(sc.matches, best)
			cur = best.end
		}
		i = j
	}
	return len(buf)
}

// Environment is the redactor of this process's environment and the key
// patterns, made once: what every surface redacts its own text with when
// it has no session's redactor.
func Environment() *Redactor { return environment.Get() }

var environment = lazy.Value[*Redactor]{New: func() *Redactor { return New(os.Environ()) }}
