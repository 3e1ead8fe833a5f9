package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

func codeOf(err error) errs.Code {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestDecoders(t *testing.T) {
	if _, err := DecodeProtectedResource([]byte(`{"resource":"https://a/mcp","authorization_servers":["https://as"]}`), "x"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{``, `[]`, `{"resource":""}`, `{"resource":"x"} {}`, `{"resource":1}`, `{"resource":"r","scopes_supported":[` + strings.Repeat(`"a",`, 300) + `"a"]}`} {
		if _, err := DecodeProtectedResource([]byte(bad), "x"); codeOf(err) != CodeInvalidMetadata {
			t.Errorf("PRM %.40q: %v", bad, err)
		}
	}
	if _, err := DecodeAuthServer([]byte(`{"issuer":"https://as","token_endpoint":"http://evil.example/token"}`), "x"); codeOf(err) != CodeInsecureEndpoint {
		t.Errorf("http token endpoint: %v", err)
	}
	if _, err := DecodeAuthServer([]byte(`{"issuer":"https://as","token_endpoint":"http://127.0.0.1:9/token"}`), "x"); err != nil {
		t.Errorf("loopback token endpoint: %v", err)
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://a/mcp","authorization_servers":["https://as"],"scopes_supported":["a"]}`))
	f.Add([]byte(`{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"access_token":"t","token_type":"Bearer","expires_in":"3600"}`))
	f.Add([]byte(`{"error":"invalid_grant","error_description":"\u001b[31m"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeProtectedResource(b, "x"); err == nil && m.Resource == "" {
			t.Fatal("PRM without resource accepted")
		}
		if m, err := DecodeAuthServer(b, "x"); err == nil {
			if m.Issuer == "" || CheckEndpoint(m.TokenEndpoint, "t") != nil {
				t.Fatalf("bad AS metadata accepted: %#v", m)
			}
		}
		if tok, err := DecodeToken(200, b, time.Unix(0, 0)); err == nil && tok.AccessToken == "" {
			t.Fatal("token without access_token accepted")
		}
	})
}

func TestDecodeToken(t *testing.T) {
	now := time.Unix(1000, 0)
	tok, err := DecodeToken(200, []byte(`{"access_token":"a","token_type":"bearer","expires_in":60,"refresh_token":"r"}`), now)
	if err != nil || tok.ExpiresAt != now.Add(time.Minute).UTC() || tok.RefreshToken != "r" {
		t.Fatalf("%v %v", tok, err)
	}
	if _, err := DecodeToken(200, []byte(`{"access_token":"a","token_type":"DPoP"}`), now); codeOf(err) != CodeNotBearer {
		t.Errorf("DPoP: %v", err)
	}
	if _, err := DecodeToken(400, []byte(`{"error":"invalid_grant"}`), now); codeOf(err) != CodeTokenFailed || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("error: %v", err)
	}
}

// TestBounds: an oversized body and a server that never answers are
// refused, each within the configured bound.
func TestBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
			return
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := &Client{MaxBytes: 1024, Timeout: 200 * time.Millisecond}
	if _, err := c.get(context.Background(), "m", srv.URL+"/big"); codeOf(err) != CodeResponseTooLarge {
		t.Errorf("big: %v", err)
	}
	if _, err := c.get(context.Background(), "m", srv.URL+"/slow"); codeOf(err) != CodeSlowResponse {
		t.Errorf("slow: %v", err)
	}
}

func TestResourceMatches(t *testing.T) {
	for _, c := range []struct {
		r, s string
		ok   bool
	}{
		{"https://a.example/mcp", "https://a.example/mcp", true},
		{"https://a.example/", "https://a.example/mcp", true},
		{"https://A.example/mcp/", "https://a.example/mcp", true},
		{"https://a.example/mc", "https://a.example/mcp", false},
		{"https://b.example/mcp", "https://a.example/mcp", false},
		{"http://a.example/mcp", "https://a.example/mcp", false},
	} {
		if got := resourceMatches(c.r, c.s); got != c.ok {
			t.Errorf("resourceMatches(%s, %s) = %v", c.r, c.s, got)
		}
	}
}

func TestCheckCallback(t *testing.T) {
	as := &AuthServer{Issuer: "https://as.example", AuthorizationResponseIssParameterSupported: true}
	q := func(s string) map[string][]string {
		m := map[string][]string{}
		for _, kv := range strings.Split(s, "&") {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	if code, err := checkCallback(q("code=c&state=s&iss=https://as.example"), "s", as); err != nil || code != "c" {
		t.Fatal(code, err)
	}
	for in, want := range map[string]errs.Code{
		"code=c&state=x&iss=https://as.example":  CodeStateMismatch,
		"code=c&state=s":                         CodeIssMismatch,
		"code=c&state=s&iss=https://as.example/": CodeIssMismatch,
		"error=access_denied&state=s":            CodeAuthorization,
	} {
		if _, err := checkCallback(q(in), "s", as); codeOf(err) != want {
			t.Errorf("%s: %v", in, err)
		}
	}
	as.AuthorizationResponseIssParameterSupported = false
	if _, err := checkCallback(q("code=c&state=s&iss=https://evil"), "s", as); codeOf(err) != CodeIssMismatch {
		t.Errorf("unexpected iss: %v", err)
	}
}
