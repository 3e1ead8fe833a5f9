package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://example.test/v1beta", "https://example.test/v1beta"},
		{"https://user:hunter22@example.test/x", "https://user:REDACTED@example.test/x"},
		{"https://tok3n@example.test/x", "https://REDACTED@example.test/x"},
		{"https://example.test/x?key=AIzaSECRET&alt=sse", "https://example.test/x?key=REDACTED&alt=sse"},
		{"https://example.test/x?API-Key=s3cret", "https://example.test/x?API-Key=REDACTED"},
		{"postgres://u:pw@db:5432/x?sslmode=disable&password=p", "postgres://u:REDACTED@db:5432/x?sslmode=disable&password=REDACTED"},
		{"::not a url key=abc", "::not a url key=REDACTED"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestURLsInAndValues(t *testing.T) {
	msg := `base URL "https://a:b@h.test/?key=K1234567" refused; retry with token=zzz and api_key=q`
	got := URLsIn(msg)
	for _, leak := range []string{"a:b@", "K1234567", "zzz", "api_key=q"} {
		if strings.Contains(got, leak) {
			t.Errorf("URLsIn left %q in %q", leak, got)
		}
	}
	got = Values("provider said: API key AIzaSyEXAMPLEKEY not valid (AIzaSyEXAMPLEKEY)", "AIzaSyEXAMPLEKEY", "abc")
	if strings.Contains(got, "AIzaSyEXAMPLEKEY") || !strings.Contains(got, Mask) {
		t.Errorf("Values = %q", got)
	}
	if got := Values("abc abc", "abc"); got != "abc abc" {
		t.Errorf("a short secret must not be replaced: %q", got)
	}
	if got := Values("k=a%2Bb%2Fc%3D%3D", "a+b/c=="); strings.Contains(got, "a%2Bb") {
		t.Errorf("query-encoded secret kept: %q", got)
	}
}

func FuzzURLsIn(f *testing.F) {
	f.Add("https://u:p@h/?key=v")
	f.Fuzz(func(t *testing.T, s string) {
		out := URLsIn(s)
		if again := URLsIn(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
	})
}

func TestBytes(t *testing.T) {
	const key = `AIza"key/with+odd&chars`
	body := []byte(`{"error":{"message":"API key not valid: AIza\"key/with+odd&chars","details":"?key=AIza%22key%2Fwith%2Bodd%26chars","ok":"https://x.test/?key=public"}}`)
	got := string(Bytes(body, key))
	if strings.Contains(got, "with+odd") || strings.Contains(got, "with%2Bodd") {
		t.Fatalf("Bytes left the key in %s", got)
	}
	if strings.Count(got, Mask) != 2 {
		t.Fatalf("want 2 masks in %s", got)
	}
	// No URL rules: a public ?key= parameter of another URL is kept (a
	// report's citation must not change).
	if !strings.Contains(got, "?key=public") {
		t.Fatalf("Bytes applied URL rules: %s", got)
	}
	// Short or empty secrets are ignored; a body without the key is the
	// same slice.
	plain := []byte(`{"message":"the key"}`)
	if out := Bytes(plain, "", "key", "AIzaOTHER0000"); &out[0] != &plain[0] || string(out) != string(plain) {
		t.Fatalf("Bytes changed %s to %s", plain, out)
	}
}
