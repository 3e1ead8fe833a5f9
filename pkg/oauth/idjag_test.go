package oauth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

const testJAG = "eyJhbGciOiJFUzI1NiIsInR5cCI6Im9hdXRoLWlkLWphZytqd3QifQ.eyJzdWIiOiJ1In0.c2ln"

// TestDecodeIDJAG: an ID-JAG is taken only from a 200 whose
// issued_token_type says so (RFC 8693 §2.2.1); anything else is named.
func TestDecodeIDJAG(t *testing.T) {
	for _, c := range []struct {
		name, body string
		status     int
		code       errs.Code
	}{
		{"ok", `{"access_token":"` + testJAG + `","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`, 200, ""},
		{"refused", `{"error":"invalid_grant","error_description":"expired"}`, 400, CodeIDJAGFailed},
		{"error in a 200", `{"error":"invalid_grant"}`, 200, CodeIDJAGFailed},
		{"not json", `<html>`, 502, CodeIDJAGFailed},
		{"wrong type", `{"access_token":"` + testJAG + `","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, 200, CodeNotIDJAG},
		{"no type", `{"access_token":"` + testJAG + `"}`, 200, CodeNotIDJAG},
		{"not a jwt", `{"access_token":"opaque","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`, 200, CodeIDJAGFailed},
		{"two values", `{"access_token":"x"} {}`, 200, CodeInvalidMetadata},
	} {
		t.Run(c.name, func(t *testing.T) {
			jag, err := DecodeIDJAG(c.status, []byte(c.body))
			if got := codeOf(err); got != c.code {
				t.Fatalf("code %q, want %q (err %v)", got, c.code, err)
			}
			if c.code == "" && jag != testJAG {
				t.Fatalf("jag %q", jag)
			}
		})
	}
}

func jwtWith(claims string) string {
	e := base64.RawURLEncoding
	return e.EncodeToString([]byte(`{"alg":"ES256"}`)) + "." + e.EncodeToString([]byte(claims)) + ".c2ln"
}

func TestCheckIDToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name, tok string
		code      errs.Code
	}{
		{"valid", jwtWith(`{"exp":1800000060}`), ""},
		{"no exp: the IdP decides", jwtWith(`{"sub":"u"}`), ""},
		{"claims not json: the IdP decides", "a.b.c", ""},
		{"expired", jwtWith(`{"exp":1799999999}`), CodeInvalidIDToken},
		{"expiring now", jwtWith(`{"exp":1800000000}`), CodeInvalidIDToken},
		{"not a jwt", "word", CodeInvalidIDToken},
		{"space inside", "a.b c.d", CodeInvalidIDToken},
		{"empty", "", CodeInvalidIDToken},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := codeOf(CheckIDToken(c.tok, now)); got != c.code {
				t.Fatalf("code %q, want %q", got, c.code)
			}
		})
	}
}

// TestReadIDTokenFile: the token file is a secret's file: only its owner
// may read it, and it is a regular file.
func TestReadIDTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "id")
	if err := os.WriteFile(p, []byte(testJAG+"\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadIDTokenFile(p); err != nil || tok != testJAG {
		t.Fatalf("%q %v", tok, err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadIDTokenFile(p); codeOf(err) != CodeInvalidIDToken || !strings.Contains(err.Error(), "can be read by others") {
		t.Fatalf("group-readable file: %v", err)
	}
	if err := os.Symlink(p, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadIDTokenFile(filepath.Join(dir, "link")); codeOf(err) != CodeInvalidIDToken {
		t.Fatalf("link: %v", err)
	}
	if _, err := ReadIDTokenFile(dir); codeOf(err) != CodeInvalidIDToken {
		t.Fatalf("folder: %v", err)
	}
}

// TestRequestIDJAG: the exchange carries what the MCP extension asks for,
// and the IdP client's secret only in the Authorization header.
func TestRequestIDJAG(t *testing.T) {
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = *r
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"` + testJAG + `","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`))
	}))
	defer srv.Close()
	c := &Client{HTTP: srv.Client()}
	x := CrossApp{IDPTokenEndpoint: srv.URL + "/token", IDPClientID: "idp", IDPClientSecret: "s3cret", IDToken: "h.p.s"}
	jag, err := c.RequestIDJAG(context.Background(), x, "https://as.example", "https://mcp.example/mcp", []string{"read", "write"})
	if err != nil || jag != testJAG {
		t.Fatalf("%q %v", jag, err)
	}
	f := got.PostForm
	want := map[string]string{"grant_type": GrantTokenExchange, "requested_token_type": TokenTypeIDJAG, "subject_token": "h.p.s",
		"subject_token_type": TokenTypeIDToken, "audience": "https://as.example", "resource": "https://mcp.example/mcp", "scope": "read write", "client_id": "", "client_secret": ""}
	for k, v := range want {
		if f.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, f.Get(k), v)
		}
	}
	if id, secret, ok := got.BasicAuth(); !ok || id != "idp" || secret != "s3cret" {
		t.Errorf("basic auth %q %q %v", id, secret, ok)
	}
	x.IDPClientSecret = ""
	if _, err := c.RequestIDJAG(context.Background(), x, "https://as.example", "https://mcp.example/mcp", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := got.BasicAuth(); ok || got.PostForm.Get("client_id") != "idp" || got.PostForm.Has("scope") {
		t.Errorf("public client: %v", got.PostForm)
	}
}

func FuzzDecodeIDJAG(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"`+testJAG+`","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`))
	f.Add(400, []byte(`{"error":"invalid_grant","error_description":"\u001b[2J"}`))
	f.Add(200, []byte(`{"access_token":"a.b.c","issued_token_type":"x"}`))
	f.Add(500, []byte(``))
	f.Fuzz(func(t *testing.T, status int, b []byte) {
		jag, err := DecodeIDJAG(status, b)
		if err == nil && (status != 200 || strings.Count(jag, ".") != 2) {
			t.Fatalf("accepted %q from HTTP %d", jag, status)
		}
		if err != nil && strings.ContainsRune(err.Error(), '\x1b') {
			t.Fatalf("unescaped control in %q", err.Error())
		}
	})
}

func FuzzIDTokenExpiry(f *testing.F) {
	f.Add(jwtWith(`{"exp":1800000000}`))
	f.Add(jwtWith(`{"exp":-1}`))
	f.Add(jwtWith(`{"exp":1e300}`))
	f.Add("a..c")
	f.Fuzz(func(t *testing.T, jwt string) {
		exp, ok := IDTokenExpiry(jwt)
		if ok && (exp.Unix() <= 0 || exp.Unix() > 1<<40) {
			t.Fatalf("exp %v out of range", exp)
		}
		_ = CheckIDToken(jwt, time.Unix(1_800_000_000, 0))
	})
}

// TestCrossAppRenewal: a cross-app token renews with its refresh token
// when it has one; without, nothing is sent and the error says that a
// fresh ID token is needed, naming the command with the stored IdP.
func TestCrossAppRenewal(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != GrantRefreshToken || r.PostForm.Get("refresh_token") != "ref-1" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"tok-2","token_type":"Bearer","expires_in":3600}`))
	}))
	defer srv.Close()
	now := time.Now()
	for _, refresh := range []string{"", "ref-1"} {
		res := &Result{Discovery: &Discovery{ServerURL: "https://mcp.example/mcp", Resource: "https://mcp.example/mcp",
			AS: &AuthServer{Issuer: "https://as.example", TokenEndpoint: srv.URL + "/token"}},
			Client: ClientAuth{ClientID: "xaa", ClientSecret: "s3cret-value", Method: AuthBasic},
			Token:  &Token{AccessToken: "tok-1", RefreshToken: refresh, ExpiresAt: now.Add(-time.Second)},
			Grant:  GrantJWTBearer, CrossApp: &CrossApp{IDPTokenEndpoint: "https://idp.example/token", IDPClientID: "idp"}}
		c := &Client{HTTP: srv.Client()}
		k := fileKeeper{home: t.TempDir(), c: c}
		p, err := k.Save(context.Background(), ProfileOf("", res, now.Add(-time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if p.OAuth.IDPTokenEndpoint != "https://idp.example/token" || p.OAuth.IDPClientID != "idp" {
			t.Fatalf("stored IdP %+v", p.OAuth)
		}
		before := requests.Load()
		q, err := c.Fresh(context.Background(), k, p)
		if refresh != "" {
			if err != nil || q.Secret != "tok-2" {
				t.Fatalf("refresh: %q %v", q.Secret, err)
			}
			continue
		}
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != CodeNotLoggedIn || !strings.Contains(e.Message, "fresh ID token") ||
			!strings.Contains(e.Hint, "--grant cross-app --idp-token-url https://idp.example/token --idp-client-id idp") || !strings.Contains(e.Hint, "--client-id xaa --client-secret-stdin") {
			t.Fatalf("no refresh token: %v", err)
		}
		if requests.Load() != before {
			t.Fatal("a request was sent without a refresh token")
		}
	}
}
