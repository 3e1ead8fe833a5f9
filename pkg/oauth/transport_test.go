package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportRenewsOnce: a 401 invalid_token renews the token once and
// resends the request, body included; a second 401 for the renewed token
// is final.
func TestTransportRenewsOnce(t *testing.T) {
	var refreshes atomic.Int32
	var mcp *httptest.Server
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			refreshes.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-new", "token_type": "Bearer", "expires_in": 3600})
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": "http://" + r.Host, "token_endpoint": "http://" + r.Host + "/token", "authorization_endpoint": "http://" + r.Host + "/authorize"})
		default:
			http.NotFound(w, r)
		}
	}))
	defer as.Close()
	var accept atomic.Value
	accept.Store("tok-new")
	mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": mcp.URL + "/mcp", "authorization_servers": []string{as.URL}})
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+accept.Load().(string) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(401)
			return
		}
		b := make([]byte, 5)
		n, _ := r.Body.Read(b)
		_, _ = w.Write(b[:n])
	}))
	defer mcp.Close()
	home := t.TempDir()
	res := &Result{Discovery: &Discovery{ServerURL: mcp.URL + "/mcp", Resource: mcp.URL + "/mcp", AS: &AuthServer{Issuer: as.URL, TokenEndpoint: as.URL + "/token"}},
		Client: ClientAuth{ClientID: "c", Method: AuthNone}, Token: &Token{AccessToken: "tok-old", RefreshToken: "ref", ExpiresAt: time.Now().Add(time.Hour)}, Grant: GrantAuthorizationCode}
	k := fileKeeper{home: home, c: &Client{}}
	p, err := k.Save(context.Background(), ProfileOf("", res, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAuthorizer(k.c, k, p)
	hc := &http.Client{Transport: a.Wrap(http.DefaultTransport)}
	resp, err := hc.Post(mcp.URL+"/mcp", "application/json", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	n, _ := resp.Body.Read(b)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(b[:n]) != "hello" || refreshes.Load() != 1 {
		t.Fatalf("status %d body %q refreshes %d", resp.StatusCode, b[:n], refreshes.Load())
	}
	accept.Store("tok-never")
	_, err = hc.Post(mcp.URL+"/mcp", "application/json", strings.NewReader("hello"))
	if inner, ok := AsAuthError(err); !ok || codeOf(inner) != CodeNotLoggedIn {
		t.Fatalf("second 401: %v", err)
	}
	if refreshes.Load() != 2 {
		t.Fatalf("refreshes %d, want 2 (one per token)", refreshes.Load())
	}
}
