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
	"github.com/clawkit/clawkit/pkg/fsx"
)

// fileKeeper is a Keeper on a home's credentials under their edit lock,
// as pkg/ops' operations run it in the owner (without the owner fence).
type fileKeeper struct {
	home string
	c    *Client
}

func (k fileKeeper) edit(change func(s *auth.Store) (bool, error)) error {
	return fsx.EditLocked(filepath.Join(k.home, auth.FileName), func() error {
		s, err := auth.Load(k.home)
		if err != nil {
			return err
		}
		save, err := change(s)
		if err != nil || !save {
			return err
		}
		return s.Save()
	})
}

func (k fileKeeper) Save(_ context.Context, p auth.Profile) (auth.Profile, error) {
	if err := CheckProfile(p); err != nil {
		return p, err
	}
	return p, k.edit(func(s *auth.Store) (bool, error) { return true, Put(s, p) })
}

func (k fileKeeper) Renew(ctx context.Context, id, stale string) (out auth.Profile, err error) {
	err = k.edit(func(s *auth.Store) (bool, error) {
		p, save, err := k.c.RenewIn(ctx, s, id, stale, func() error { return nil })
		out = p
		return save, err
	})
	return out, err
}

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
	c := &Client{}
	k := fileKeeper{home: home, c: c}
	p, err := k.Save(context.Background(), ProfileOf("", res, now.Add(-time.Hour))) // issued an hour ago: 60 s margin
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := c.Fresh(context.Background(), k, p)
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
