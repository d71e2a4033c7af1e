package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// Fake keys of the right shapes.
const (
	fakeOpenAIKey       = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	fakeAnthropicKey    = "sk-ant-api03-Zx9_Yw8-Vu7tSr6qPo5nMl4kJi3hGf2eDc1bA0"
	fakeGHPToken        = "ghp_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2"
	fakeGHSToken        = "ghs_012345678901234567890123456789abcdef"
	fakeGitHubPAT       = "github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW"
	fakeAWSKeyID        = "AKIAIOSFODNN7EXAMPLE"
	fakeAWSSessionKeyID = "ASIAZ2XQ7EXAMPLE0123"
	fakeSlackToken      = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	fakeGoogleKey       = "AIzaSyA1b2C3d4E5f6G7h8I9j0K_l-M2n3O4p5Q"
	fakeGitLabToken     = "glpat-xY9_zA8-bC7dE6fG5hI4"
	fakeStripeKey       = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	fakeStripeRKey      = "rk_live_51H8abcDEFghiJKLmnoPQRstu"
	fakeJWT             = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	fakePEMKey          = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Y1pLh7uZ\nq0wP5XbGvJp0bY6n0sMw\n-----END RSA PRIVATE KEY-----"
	fakeOpenSSHKey      = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
	fakeCertificate     = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUF\n-----END CERTIFICATE-----"
)

func TestRedactPatterns(t *testing.T) {
	var r *Redactor // patterns only
	for _, tc := range []struct {
		name, in, want string
	}{
		{"openai", "key " + fakeOpenAIKey + " end", "key [REDACTED] end"},
		{"anthropic", "ANTHROPIC_API_KEY=" + fakeAnthropicKey + "\n", "ANTHROPIC_API_KEY=[REDACTED]\n"},
		{"sk plain", `"sk-0123456789abcdefghijKLMN"`, `"[REDACTED]"`},
		{"sk too short", "sk-0123456789abcdefghi", "sk-0123456789abcdefghi"},
		{"sk inside a word", "task-list-for-the-nightly-build-job", "task-list-for-the-nightly-build-job"},
		{"sk inside a word 2", "risk-assessment-pipeline-stage", "risk-assessment-pipeline-stage"},
		{"github ghp", "token: " + fakeGHPToken, "token: [REDACTED]"},
		{"github ghs", fakeGHSToken + ",", "[REDACTED],"},
		{"github gho ghu ghr", "gho_" + fakeGHSToken[4:] + " ghu_" + fakeGHSToken[4:] + " ghr_" + fakeGHSToken[4:], "[REDACTED] [REDACTED] [REDACTED]"},
		{"github too short", "ghp_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1w", "ghp_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1w"},
		{"github other letter", "ghx_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2", "ghx_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2"},
		{"github pat", "GH=" + fakeGitHubPAT + "\n", "GH=[REDACTED]\n"},
		{"github pat short", "see github_pat_abc for details", "see github_pat_abc for details"},
		{"aws key id", "aws_access_key_id = " + fakeAWSKeyID, "aws_access_key_id = [REDACTED]"},
		{"aws session key id", "(" + fakeAWSSessionKeyID + ")", "([REDACTED])"},
		{"aws lowercase", "AKIAabcdefghijklmnop", "AKIAabcdefghijklmnop"},
		{"aws short", "AKIAIOSFODNN7EXAMP", "AKIAIOSFODNN7EXAMP"},
		{"aws inside a word", "MAKIAIOSFODNN7EXAMPLE", "MAKIAIOSFODNN7EXAMPLE"},
		{"slack", "SLACK=" + fakeSlackToken, "SLACK=[REDACTED]"},
		{"slack other letter", "xoxo-hugs-and-kisses-forever", "xoxo-hugs-and-kisses-forever"},
		{"slack short", "xoxb-12345", "xoxb-12345"},
		{"google", "key=" + fakeGoogleKey + "&q=1", "key=[REDACTED]&q=1"},
		{"google short", "AIzaSyA1b2C3d4E5f6G7h8I9j0K_l-M2n3O4p5 x", "AIzaSyA1b2C3d4E5f6G7h8I9j0K_l-M2n3O4p5 x"},
		{"gitlab", "PRIVATE-TOKEN: " + fakeGitLabToken, "PRIVATE-TOKEN: [REDACTED]"},
		{"gitlab short", "glpat-short", "glpat-short"},
		{"stripe sk", "stripe " + fakeStripeKey + ".", "stripe [REDACTED]."},
		{"stripe rk", fakeStripeRKey, "[REDACTED]"},
		{"stripe test key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"},
		{"stripe short", "sk_live_abc", "sk_live_abc"},
		{"jwt", `{"id_token":"` + fakeJWT + `"}`, `{"id_token":"[REDACTED]"}`},
		{"jwt header only", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 alone", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 alone"},
		{"jwt no payload", "eyJhbGciOiJIUzI1NiJ9.notapayload.sig", "eyJhbGciOiJIUzI1NiJ9.notapayload.sig"},
		{"private key", "key:\n" + fakePEMKey + "\nafter\n", "key:\n[REDACTED]\nafter\n"},
		{"openssh key", fakeOpenSSHKey + "\n", "[REDACTED]\n"},
		{"two keys", fakePEMKey + "\n" + fakeOpenSSHKey, "[REDACTED]\n[REDACTED]"},
		{"unterminated key", "x\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrY\nand more", "x\n[REDACTED]"},
		{"unterminated key, then prose", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n(truncated). Next", "[REDACTED](truncated). Next"},
		{"encrypted key", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\nhQ2x\n-----END RSA PRIVATE KEY-----.", "[REDACTED]."},
		{"certificate", fakeCertificate + "\n", fakeCertificate + "\n"},
		{"begin prose", "-----BEGIN of the section-----", "-----BEGIN of the section-----"},
		{"authorization bearer", "Authorization: Bearer abc123.def-456_ghi\r\n", "Authorization: Bearer [REDACTED]\r\n"},
		{"bearer jwt", "curl -H 'Authorization: Bearer " + fakeJWT + "'", "curl -H 'Authorization: Bearer [REDACTED]'"},
		{"bearer sk key", "bearer  " + fakeOpenAIKey, "bearer  [REDACTED]"},
		{"bearer padded", "Bearer dGhpcyBpcyBhIHRva2Vu== next", "Bearer [REDACTED] next"},
		{"bearer prose", "Send a Bearer token with each request.", "Send a Bearer token with each request."},
		{"bearer realm", `WWW-Authenticate: Bearer realm="api"`, `WWW-Authenticate: Bearer realm="api"`},
		{"bearer placeholder", "Authorization: Bearer <token>", "Authorization: Bearer <token>"},
		{"bearer at the end", "Authorization: Bearer", "Authorization: Bearer"},
		{"ordinary", "INFO task-runner: disk 93% full, 12 keys, 4096 tokens, session ok\n", "INFO task-runner: disk 93% full, 12 keys, 4096 tokens, session ok\n"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q)\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
		// The same through a stream, one byte at a time.
		if got := redactStreamAll(r.NewStream(), tc.in, func() int { return 1 }); got != tc.want {
			t.Errorf("%s: streamed %q\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestRedactSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"MY_API_KEY": true, "OPENAI_API_KEY": true, "apikey": true, "GITHUB_TOKEN": true,
		"CLIENT_SECRET": true, "DB_PASSWORD": true, "MYSQL_PASSWD": true, "PGPASS": true,
		"GOOGLE_CREDENTIALS": true, "NPM_AUTH": true, "HTTP_AUTHORIZATION": true,
		"SSH_PRIVATE_KEY": true, "SESSION_SECRET": true, "RAILS_SESSION": true, "COOKIE_JAR": true,
		"AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_ACCESS_KEY_ID": true,

		"HOME": false, "PATH": false, "USER": false, "LANG": false, "TERM": false,
		"KEYBOARD": false, "XKB_KEYMAP": false, "GIT_AUTHOR_NAME": false, "GIT_AUTHOR_EMAIL": false,
		"XAUTHORITY": false, "SSH_AUTH_SOCK": false, "GIT_ASKPASS": false, "SSH_ASKPASS": false,
		"GOPRIVATE": false, "GOAUTH": false, "GPG_AGENT_INFO": false,
		"XDG_SESSION_ID": false, "XDG_SESSION_TYPE": false, "DESKTOP_SESSION": false,
		"DBUS_SESSION_BUS_ADDRESS": false, "SESSION_MANAGER": false, "TOKENIZERS_PARALLELISM": false,
		"GOOGLE_APPLICATION_CREDENTIALS_FILE": false, "PGPASSFILE": false, "SSH_KEY_PATH": false,
		"NO_PROXY_BYPASS": false, "DB_PASSWORD_USER": false, "AUTH_HOST": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRedactEnvironment(t *testing.T) {
	r := New([]string{
		"MY_API_KEY=abc123xyz789secret",
		"HOME=/root",
		"PATH=/usr/local/bin:/usr/bin",
		"SHORT_TOKEN=abc123",               // too short
		"FEATURE_AUTH=disabled",            // a common word
		"SSH_AUTH_SOCK=/tmp/ssh-XYZ/agent", // a path, and a known name
		"GIT_AUTHOR_NAME=Jane Developer",
		"GOPRIVATE=github.com/example/*",
		"DB_PASSWORD=  Tr0ub4dor&3  \n", // also without the spaces
		"MULTI_SECRET=line-one-ABCDEFGH\nline-two-IJKLMNOP",
		"PLAIN_VALUE=notasecret12345", // not a secret's name
		"BROKEN",
	})
	for _, tc := range []struct{ in, want string }{
		{"key=abc123xyz789secret\n", "key=[REDACTED:MY_API_KEY]\n"},
		{"xabc123xyz789secretx", "x[REDACTED:MY_API_KEY]x"},
		{"abc123xyz789secre", "abc123xyz789secre"},
		{"home is /root, path /usr/local/bin:/usr/bin", "home is /root, path /usr/local/bin:/usr/bin"},
		{"abc123 disabled Jane Developer github.com/example/*", "abc123 disabled Jane Developer github.com/example/*"},
		{"pw Tr0ub4dor&3.", "pw [REDACTED:DB_PASSWORD]."},
		{"line-one-ABCDEFGH and line-two-IJKLMNOP", "[REDACTED:MULTI_SECRET] and [REDACTED:MULTI_SECRET]"},
		{"with " + fakeAWSKeyID, "with [REDACTED]"},
		{"notasecret12345", "notasecret12345"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactAddSecret(t *testing.T) {
	r := New(nil)
	r.AddSecret("s3cr3t!")
	r.AddSecret("")
	if got, want := r.String("a s3cr3t! b"), "a [REDACTED] b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A secret longer than a piece is redacted in pieces, all of it.
	long := randomBlob(rand.New(rand.NewPCG(3, 3)), 11200)
	r.AddSecret(long)
	got := r.String("<" + long + ">")
	if want := "<" + strings.Repeat("[REDACTED]", (len(long)+secretPiece-1)/secretPiece) + ">"; got != want {
		t.Errorf("long secret: got %q", got)
	}
	if s := redactStreamAll(r.NewStream(), "<"+long+">", func() int { return 1000 }); s != got {
		t.Errorf("long secret streamed: got %q, want %q", s, got)
	}
	// The zero and the nil Redactor redact patterns only; AddSecret on nil
	// does nothing.
	var zero Redactor
	var nilR *Redactor
	nilR.AddSecret("s3cr3t!")
	for _, rr := range []*Redactor{&zero, nilR} {
		if got := rr.String("s3cr3t! " + fakeGHPToken); got != "s3cr3t! [REDACTED]" {
			t.Errorf("patterns only: got %q", got)
		}
	}
	var zs Stream // a zero stream has no Redactor: patterns only
	if got := redactStreamAll(&zs, "s3cr3t! "+fakeGHPToken, func() int { return 3 }); got != "s3cr3t! [REDACTED]" {
		t.Errorf("zero stream: got %q", got)
	}
	// After Flush, a stream starts again: "sk" and "-..." are two outputs.
	var out []byte
	out = append(out, zs.Write([]byte("a sk"))...)
	out = append(out, zs.Flush()...)
	out = append(out, zs.Write([]byte("-0123456789abcdefghijKLMN"))...)
	out = append(out, zs.Flush()...)
	if string(out) != "a sk-0123456789abcdefghijKLMN" {
		t.Errorf("stream reused after Flush: got %q", out)
	}
	zero.AddSecret("s3cr3t!")
	if got := zero.String("s3cr3t!"); got != "[REDACTED]" {
		t.Errorf("zero Redactor after AddSecret: got %q", got)
	}
}

// Event logs and state files are JSON, and are redacted as JSON text: a
// secret is found as JSON escapes it, and a redaction never breaks the
// document.
func TestRedactJSON(t *testing.T) {
	r := New([]string{`DB_PASSWORD=pa"ss&w<rd\1`, `MY"TOKEN=abcdefgh123`})
	texts := []string{
		`pa"ss&w<rd\1 and abcdefgh123`,
		"log:\n" + fakePEMKey + "\nafter",
		"log:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Y1pLh7uZ",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\\\"quoted\"",
	}
	// Blocks cut by the cap at every place of a line, inside "\n" and
	// "\u003c" too.
	for k := range 66 {
		texts = append(texts, "-----BEGIN RSA PRIVATE KEY-----\n"+strings.Repeat("Q", k)+"\n"+
			strings.Repeat("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Y1pLh7uZq0wP5XbGvJp0bY\n", 300))
		texts = append(texts, "-----BEGIN RSA PRIVATE KEY-----\n"+strings.Repeat("Q", k)+"\n"+
			strings.Repeat("MIIEpAIB<AAKCAQEA3Tz2m\n", 900))
	}
	for _, v := range texts {
		for _, html := range []bool{true, false} {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(map[string]string{"text": v, "after": "kept"}); err != nil {
				t.Fatal(err)
			}
			got := r.String(b.String())
			if !json.Valid([]byte(got)) || !strings.Contains(got, `"kept"`) {
				t.Errorf("not the JSON document after redaction: %.200s", got)
			}
			if b.Len() < redactMaxHold && (strings.Contains(got, "ss") || strings.Contains(got, "abcdefgh") || strings.Contains(got, "MIIE")) {
				t.Errorf("JSON %.200s\nredacted to %.200s", b.String(), got)
			}
		}
	}
	if got := r.String("abcdefgh123"); got != "[REDACTED:MY_TOKEN]" {
		t.Errorf("got %q", got)
	}
}

// redactStreamAll writes text to s in chunks whose sizes next returns, flushes
// and returns the concatenated output.
func redactStreamAll(s *Stream, text string, next func() int) string {
	var out bytes.Buffer
	for b := []byte(text); len(b) > 0; {
		n := min(max(next(), 1), len(b))
		out.Write(s.Write(b[:n]))
		b = b[n:]
	}
	out.Write(s.Flush())
	return out.String()
}

// redactChunks streams the chunks through a new stream of r. (Each result
// is copied before the next call, which may reuse its buffer.)
func redactChunks(r *Redactor, chunks ...string) string {
	s := r.NewStream()
	var out []byte
	for _, c := range chunks {
		out = append(out, s.Write([]byte(c))...)
	}
	return string(append(out, s.Flush()...))
}

// redactSplitTexts gives texts with a secret of each kind among ordinary
// text, and each as it should be redacted.
func redactSplitTexts() (r *Redactor, texts, wants []string) {
	r = New([]string{"MY_API_KEY=abc123xyz789secret", "GH_TOKEN=" + fakeGHPToken, "DB_PASSWORD=correct horse battery staple"})
	r.AddSecret("hunter2hunter2")
	for _, s := range []struct{ secret, repl string }{
		{"abc123xyz789secret", "[REDACTED:MY_API_KEY]"},
		{fakeGHPToken, "[REDACTED:GH_TOKEN]"},
		{"hunter2hunter2", "[REDACTED]"},
		{fakeOpenAIKey, "[REDACTED]"},
		{fakeAWSKeyID, "[REDACTED]"},
		{fakeSlackToken, "[REDACTED]"},
		{fakeGoogleKey, "[REDACTED]"},
		{fakeGitLabToken, "[REDACTED]"},
		{fakeGitHubPAT, "[REDACTED]"},
		{fakeStripeKey, "[REDACTED]"},
		{fakeJWT, "[REDACTED]"},
		{fakePEMKey, "[REDACTED]"},
		{"Bearer abc123.def-456", "Bearer [REDACTED]"},
		// Encoded forms.
		{escapeJSON("abc123xyz789secret", false, func(rune) bool { return false }), "[REDACTED:MY_API_KEY]"},
		{`abc123\u0078yz789%73ecre\x74`, "[REDACTED:MY_API_KEY]"},
		{percentAll("hunter2hunter2"), "[REDACTED]"},
		{"correct+horse+battery+staple", "[REDACTED:DB_PASSWORD]"},
		{`ghp_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX\u0032`, "[REDACTED:GH_TOKEN]"},
		{base64.StdEncoding.EncodeToString([]byte("abc123xyz789secret")), "[REDACTED:MY_API_KEY]"},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("u:abc123xyz789secret")), "Basic dTp[REDACTED:MY_API_KEY]Q="},
	} {
		texts = append(texts, "step 1 ok\nusing "+s.secret+" for the task\nend\n")
		wants = append(wants, "step 1 ok\nusing "+s.repl+" for the task\nend\n")
	}
	return r, texts, wants
}

func TestRedactStreamSplitAnywhere(t *testing.T) {
	r, texts, wants := redactSplitTexts()
	for k, text := range texts {
		want := wants[k]
		if got := r.String(text); got != want {
			t.Fatalf("String(%q)\n got %q\nwant %q", text, got, want)
		}
		for i := 0; i <= len(text); i++ {
			if got := redactChunks(r, text[:i], text[i:]); got != want {
				t.Fatalf("split at %d of %q\n got %q\nwant %q", i, text, got, want)
			}
			for j := i; j <= len(text); j++ {
				if got := redactChunks(r, text[:i], text[i:j], text[j:]); got != want {
					t.Fatalf("split at %d and %d of %q\n got %q\nwant %q", i, j, text, got, want)
				}
			}
		}
	}
}

// Whatever the chunks, what a stream has emitted is at every moment a
// prefix of the redacted whole: no part of a secret goes out early.
func TestRedactStreamEmitsNoPrefixEarly(t *testing.T) {
	r, texts, wants := redactSplitTexts()
	for k, text := range texts {
		s := r.NewStream()
		var out []byte
		for i := range len(text) {
			out = append(out, s.Write([]byte{text[i]})...)
			if !bytes.HasPrefix([]byte(wants[k]), out) {
				t.Fatalf("after %q, emitted %q: not a prefix of %q", text[:i+1], out, wants[k])
			}
		}
		if out = append(out, s.Flush()...); string(out) != wants[k] {
			t.Fatalf("got %q, want %q", out, wants[k])
		}
	}
}

func TestRedactStreamHoldsOnlyAPossibleSecret(t *testing.T) {
	r := New([]string{"MY_API_KEY=abc123xyz789secret"})
	for _, tc := range []struct{ chunk, emit string }{
		{"hello world\n", "hello world\n"},
		{"no newline yet", "no newline yet"},
		{"the task", "the task"},         // "sk" in a word cannot start a key
		{"ask for sk-", "ask for "},      // an anchor
		{"key: s", "key: "},              // the start of an anchor
		{"value=abc12", "value="},        // the start of the secret
		{"token sk-abcdef", "token "},    // a pattern in progress
		{"sk-abcdef ok", "sk-abcdef ok"}, // one that has ended
		{"A", ""},
		{"x A", "x "},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE", ""},
	} {
		s := r.NewStream()
		if got := string(s.Write([]byte(tc.chunk))); got != tc.emit {
			t.Errorf("Write(%q) = %q, want %q", tc.chunk, got, tc.emit)
		}
	}
	// The result aliases the chunk when nothing was redacted or held.
	s := r.NewStream()
	chunk := []byte("plain line\n")
	if got := s.Write(chunk); &got[0] != &chunk[0] || len(got) != len(chunk) {
		t.Error("a clean chunk was copied")
	}
}

func TestRedactStreamPrivateKeyCap(t *testing.T) {
	var r Redactor
	body := strings.Repeat("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Y1pLh7uZq0wP5XbGvJp0bY6n\n", 400) // 26 KB
	for _, tail := range []string{"-----END RSA PRIVATE KEY-----\nafter\n", "(no END line)\n"} {
		text := "before\n-----BEGIN RSA PRIVATE KEY-----\n" + body + tail
		want := r.String(text)
		if !strings.HasPrefix(want, "before\n[REDACTED]") || len(want) != len(text)-redactMaxHold+len("[REDACTED]") {
			t.Fatalf("a block longer than the cap: got %d bytes, starting %q", len(want), want[:min(40, len(want))])
		}
		s := r.NewStream()
		var out []byte
		for b := []byte(text); len(b) > 0; {
			n := min(1000, len(b))
			out = append(out, s.Write(b[:n])...)
			b = b[n:]
			if len(s.hold) >= redactMaxHold {
				t.Fatalf("holding %d bytes", len(s.hold))
			}
		}
		if out = append(out, s.Flush()...); string(out) != want {
			t.Fatalf("streamed output differs from String")
		}
	}
}

func TestRedactConcurrentAddSecret(t *testing.T) {
	r := New([]string{"MY_API_KEY=abc123xyz789secret"})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := r.NewStream()
			for i := range 200 {
				if g == 0 {
					r.AddSecret(fmt.Sprintf("added-secret-%04d", i))
				}
				s.Write([]byte("x abc123xyz789secret y\n"))
				_ = r.String("added-secret-0001")
			}
			s.Flush()
		}()
	}
	wg.Wait()
	if got := r.String("added-secret-0199"); got != "[REDACTED]" {
		t.Errorf("got %q", got)
	}
}

// Texts built of pieces that secrets and patterns are made of, cut into
// random chunks: the stream gives what String gives, and never emits
// ahead of it.
func TestRedactStreamMatchesStringRandom(t *testing.T) {
	r := New([]string{
		"MY_API_KEY=abc123xyz789secret",
		"OTHER_TOKEN=abc123xyz789secretlonger", // a secret that extends another
		"WRAPPED_KEY=<<" + fakeAWSKeyID + ">>", // a secret around a pattern
		"SHORTISH_PASSWORD=xoxb-1234",          // a secret that starts like a pattern
	})
	r.AddSecret("hunter2hunter2")
	pieces := []string{
		"abc123", "xyz789", "secret", "longer", "abc123xyz789secret", "<<", ">>", fakeAWSKeyID, "AKIA", "ASIA",
		"sk-", "sk", "s", "-", "_", "0123456789", "abcdefghij", "ABCDEFGHIJ", "task", " ", "\n", "=", ".",
		"ghp_", fakeGHPToken, "github_pat_", "glpat-", "xox", "xoxb-", "xoxb-1234", "AIza", "eyJ", "eyJhbGciOiJIUzI1NiJ9",
		fakeJWT, "Bearer ", "Bearer", "bearer ", "Bearer abc", "-----BEGIN", "-----BEGIN RSA PRIVATE KEY-----",
		"-----END RSA PRIVATE KEY-----", "-----END", " PRIVATE KEY", "-----", fakePEMKey, "hunter2", "hunter2hunter2",
		"sk_live_", "rk_live_", fakeStripeKey, "MIIEpAIBAAKCAQEA",
		// Escapes and encoded forms.
		"\\", `\u00`, `\u0061`, `\x61`, `\u0073ecret`, "%", "%6", "%61", "%73ecret", "+", "%25", `\\`,
		"YWJjMTIzeHl6Nzg5c2VjcmV0", "YWJjMTIz", "eHl6Nzg5c2VjcmV0", "aHVudGVyMmh1bnRlcjI", `\u0068unter2`,
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		var b strings.Builder
		for range rnd.IntN(30) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		text := b.String()
		want := r.String(text)
		s := r.NewStream()
		var out []byte
		maxChunk := 1 + rnd.IntN(40)
		for rest := text; len(rest) > 0; {
			n := min(len(rest), rnd.IntN(maxChunk+1))
			out = append(out, s.Write([]byte(rest[:n]))...)
			rest = rest[n:]
			if !strings.HasPrefix(want, string(out)) {
				t.Fatalf("iteration %d: %q\nemitted %q, not a prefix of %q", iter, text, out, want)
			}
		}
		if out = append(out, s.Flush()...); string(out) != want {
			t.Fatalf("iteration %d: %q\nstreamed %q\nString   %q", iter, text, out, want)
		}
	}
}

// FuzzRedactStream: for any input cut into any chunks, the stream gives
// what String gives for the whole, and never emits ahead of it.
func FuzzRedactStream(f *testing.F) {
	r, texts, _ := redactSplitTexts()
	for i, text := range texts {
		f.Add([]byte(text), []byte{byte(i), 3, 17, 1, 250})
	}
	for _, seed := range []string{
		"", "sk-", "s", "ask sk-0123456789abcdefghijKLMN", "AKIAIOSFODNN7EXAMPLE", "AKIAabc",
		fakePEMKey + fakePEMKey, "-----BEGIN RSA PRIVATE KEY-----\nabc", fakeCertificate,
		"Bearer Bearer abc123", "bearer token", fakeJWT + "." + fakeJWT, "eyJ.eyJ.x",
		"abc123xyz789abc123xyz789secret", "hunter2hunter2hunter2", fakeGitLabToken + fakeGitHubPAT,
		`abc\u0031\u00323xyz789%73ecret`, `\\u0061bc123xyz789secret`, "%61%62c123xyz789secre%7", `abc123xyz789secre\u007`,
		"correct+horse+battery+staple", "YWJjMTIzeHl6Nzg5c2VjcmV0", "dTphYmMxMjN4eXo3ODlzZWNyZXQ=", `\uD83D\uDE00`,
	} {
		f.Add([]byte(seed), []byte{1, 2, 5})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want := r.String(string(data))
		s := r.NewStream()
		var out []byte
		for i, b := 0, data; len(b) > 0; i++ {
			n := len(b)
			if len(cuts) > 0 {
				n = min(int(cuts[i%len(cuts)]), len(b)) // 0: an empty write
			}
			out = append(out, s.Write(b[:n])...)
			b = b[n:]
			if !bytes.HasPrefix([]byte(want), out) {
				t.Fatalf("emitted %q, not a prefix of String's %q", out, want)
			}
			if i > 4*len(data)+10 { // all cuts are 0: write the rest at once
				out = append(out, s.Write(b)...)
				break
			}
		}
		if out = append(out, s.Flush()...); string(out) != want {
			t.Fatalf("input %q in chunks %v:\nstreamed %q\nString   %q", data, cuts, out, want)
		}
	})
}

// redactBenchLines returns about size bytes of ordinary log lines of 100 bytes
// each; with dirty, one line in 100 carries a key.
func redactBenchLines(size int, dirty bool) []byte {
	rnd := rand.New(rand.NewPCG(7, 7))
	levels := []string{"INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR"}
	components := []string{"http", "worker", "db.pool", "scheduler", "auth", "cache", "grpc.server", "queue", "agent", "build"}
	messages := []string{"request completed", "connection established", "retrying after timeout",
		"cache miss for key", "job finished", "slow query detected", "token refreshed",
		"failed to read body: unexpected EOF", "user logged in", "upload of report.txt done",
		"checking disk usage", "task queued", "session renewed", "compiling package steps"}
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	keys := []string{fakeOpenAIKey, fakeGHPToken, fakeAWSKeyID, "abc123xyz789secret", fakeJWT, "Bearer abc123.def-456", fakeSlackToken, fakeGoogleKey}
	var b bytes.Buffer
	line := make([]byte, 0, 256)
	for n := 0; b.Len() < size; n++ {
		line = fmt.Appendf(line[:0], "2025-03-%02dT%02d:%02d:%02d.%03dZ %s [%s] ",
			1+rnd.IntN(28), rnd.IntN(24), rnd.IntN(60), rnd.IntN(60), rnd.IntN(1000),
			levels[rnd.IntN(len(levels))], components[rnd.IntN(len(components))])
		if dirty && n%100 == 0 {
			line = append(line, keys[(n/100)%len(keys)]...)
			line = append(line, ' ')
		}
		switch rnd.IntN(4) {
		case 0:
			line = fmt.Appendf(line, "%s method=%s path=/api/v1/items/%d status=%d dur=%dms",
				messages[rnd.IntN(len(messages))], methods[rnd.IntN(len(methods))], rnd.IntN(100000), 200+rnd.IntN(300), rnd.IntN(2000))
		case 1:
			line = fmt.Appendf(line, "worker-%d picked job %08x from queue default, attempt %d of 5", rnd.IntN(16), rnd.Uint32(), 1+rnd.IntN(5))
		case 2:
			line = fmt.Appendf(line, "%s: %d tokens in, %d out, %d keys cached, %.1f%% of disk used",
				messages[rnd.IntN(len(messages))], rnd.IntN(90000), rnd.IntN(4000), rnd.IntN(500), rnd.Float64()*100)
		case 3:
			line = fmt.Appendf(line, "%s id=%08x file=./src/app/server.go:%d err=nil", messages[rnd.IntN(len(messages))], rnd.Uint32(), rnd.IntN(900))
		}
		for len(line) < 99 {
			line = fmt.Appendf(line, " seq=%d", rnd.IntN(1000))
		}
		if !dirty || n%100 != 0 {
			line = line[:99]
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

var redactBenchEnv = []string{
	"OPENAI_API_KEY=" + fakeOpenAIKey,
	"GITHUB_TOKEN=" + fakeGHPToken,
	"MY_API_KEY=abc123xyz789secret",
	"DB_PASSWORD=Tr0ub4dor&3-horse",
	"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color",
}

func benchmarkRedact(b *testing.B, dirty bool) {
	data := redactBenchLines(64<<20, dirty)
	r := New(redactBenchEnv)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	var n int
	for b.Loop() {
		s := r.NewStream()
		for p := data; len(p) > 0; {
			k := min(256<<10, len(p))
			n += len(s.Write(p[:k]))
			p = p[k:]
		}
		n += len(s.Flush())
	}
	if n == 0 {
		b.Fatal("no output")
	}
}

func BenchmarkRedactClean(b *testing.B) { benchmarkRedact(b, false) }
func BenchmarkRedactDirty(b *testing.B) { benchmarkRedact(b, true) }

func TestRedactBenchInput(t *testing.T) {
	r := New(redactBenchEnv)
	clean := redactBenchLines(1<<20, false)
	if got := r.String(string(clean)); got != string(clean) {
		t.Error("the clean benchmark input has something to redact")
	}
	if i := bytes.IndexByte(clean, '\n'); i != 99 {
		t.Errorf("a clean line is %d bytes", i+1)
	}
	dirty := redactBenchLines(1<<20, true)
	if got := strings.Count(r.String(string(dirty)), "[REDACTED"); got < 100 {
		t.Errorf("%d redactions in the dirty benchmark input", got)
	}
}

// randomBlob returns size bytes of base64-like text with no whitespace.
func randomBlob(r *rand.Rand, size int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, size)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}
