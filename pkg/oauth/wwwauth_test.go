package oauth

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	cases := []struct {
		in   []string
		want []Challenge
	}{
		{[]string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource", scope="read write"`},
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"resource_metadata": "https://a.example/.well-known/oauth-protected-resource", "scope": "read write"}}}},
		{[]string{`Basic realm="x", Bearer error=invalid_token, error_description="a \"quoted\" word"`},
			[]Challenge{{Scheme: "Basic", Params: map[string]string{"realm": "x"}}, {Scheme: "Bearer", Params: map[string]string{"error": "invalid_token", "error_description": `a "quoted" word`}}}},
		{[]string{`Negotiate abc123==`, `Bearer`},
			[]Challenge{{Scheme: "Negotiate", Params: map[string]string{}, Token68: "abc123=="}, {Scheme: "Bearer", Params: map[string]string{}}}},
		{[]string{`Bearer SCOPE="a", scope="b"`}, []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a"}}}},
		{[]string{`Bearer realm="unterminated`}, []Challenge{{Scheme: "Bearer", Params: map[string]string{}}}},
		{[]string{``, `,,`}, nil},
	}
	for _, c := range cases {
		got := ParseChallenges(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseChallenges(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}
	if b, ok := Bearer(ParseChallenges([]string{`basic realm=x, bearer scope="s"`})); !ok || b.Params["scope"] != "s" {
		t.Errorf("Bearer: %v %v", b, ok)
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"`,
		`Basic realm="x", Bearer error="insufficient_scope"`, `Negotiate abc==`, `Bearer "`, `a=b=c`, `Bearer x="\`, strings.Repeat("Bearer a=b, ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs := ParseChallenges([]string{s})
		if len(cs) > maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" || len(c.Params) > maxParams {
				t.Fatalf("bad challenge %#v", c)
			}
			for k := range c.Params {
				if k != strings.ToLower(k) {
					t.Fatalf("param name %q not lower case", k)
				}
			}
		}
	})
}
