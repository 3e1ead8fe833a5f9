package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
)

// TestRenewOnce: callers that saw the same stale token at once make one
// refresh (the credentials' edit lock), all get the new token, and the
// rotated refresh token is what the file holds afterwards.
func TestRenewOnce(t *testing.T) {
	var refreshes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != "ref-1" || r.PostForm.Get("resource") != "https://mcp.example/mcp" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		n := refreshes.Add(1)
		time.Sleep(50 * time.Millisecond) // hold the others on the lock a while
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("tok-%d", n+1), "token_type": "Bearer", "expires_in": 3600, "refresh_token": "ref-2"})
	}))
	defer srv.Close()
	home := t.TempDir()
	now := time.Now()
	res := &Result{Discovery: &Discovery{ServerURL: "https://mcp.example/mcp", Resource: "https://mcp.example/mcp",
		AS: &AuthServer{Issuer: "https://as.example", TokenEndpoint: srv.URL + "/token"}},
		Client: ClientAuth{ClientID: "c", Method: AuthNone}, Token: &Token{AccessToken: "tok-1", RefreshToken: "ref-1", ExpiresAt: now.Add(10 * time.Second)},
		Grant: GrantAuthorizationCode}
	p, err := SaveResult(home, "", res, now.Add(-time.Hour)) // issued an hour ago: 60 s margin
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := c.Fresh(context.Background(), home, p)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = q.Secret
		}()
	}
	wg.Wait()
	if n := refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	for i, s := range got {
		if s != "tok-2" {
			t.Errorf("caller %d got %q", i, s)
		}
	}
	s, err := auth.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := s.Get(p.ID)
	if q.Secret != "tok-2" || q.OAuth.RefreshToken != "ref-2" {
		t.Errorf("stored %q / %q", q.Secret, q.OAuth.RefreshToken)
	}
	fi, err := os.Stat(filepath.Join(home, auth.FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials mode: %v %v", fi.Mode(), err)
	}
}
