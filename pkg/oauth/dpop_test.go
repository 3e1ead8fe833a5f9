package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// checkProof verifies a DPoP proof as a server does (RFC 9449 §4.3): its
// header, its ES256 signature with the embedded public key, and its
// claims; it answers the claims.
func checkProof(t *testing.T, proof, method, target, token string) map[string]any {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a JWS", proof)
	}
	var hdr struct {
		Typ string            `json:"typ"`
		Alg string            `json:"alg"`
		JWK map[string]string `json:"jwk"`
	}
	var claims map[string]any
	hb, _ := b64.DecodeString(parts[0])
	cb, _ := b64.DecodeString(parts[1])
	if json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(cb, &claims) != nil {
		t.Fatalf("proof parts do not decode")
	}
	if hdr.Typ != "dpop+jwt" || hdr.Alg != "ES256" || hdr.JWK["kty"] != "EC" || hdr.JWK["crv"] != "P-256" || hdr.JWK["d"] != "" {
		t.Fatalf("proof header %+v", hdr)
	}
	x, _ := b64.DecodeString(hdr.JWK["x"])
	y, _ := b64.DecodeString(hdr.JWK["y"])
	sig, _ := b64.DecodeString(parts[2])
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatalf("proof key: %v", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatalf("proof signature does not verify")
	}
	u, _ := url.Parse(target)
	u.RawQuery, u.Fragment = "", ""
	if claims["htm"] != method || claims["htu"] != u.String() || claims["jti"] == "" {
		t.Fatalf("proof claims %v for %s %s", claims, method, target)
	}
	if iat, _ := claims["iat"].(float64); time.Since(time.Unix(int64(iat), 0)).Abs() > time.Minute {
		t.Fatalf("iat %v", claims["iat"])
	}
	if token != "" {
		h := sha256.Sum256([]byte(token))
		if claims["ath"] != b64.EncodeToString(h[:]) {
			t.Fatalf("ath %v", claims["ath"])
		}
	} else if _, ok := claims["ath"]; ok {
		t.Fatalf("a token request's proof carries ath")
	}
	return claims
}

// TestDPoPTokenAndResource: a login's DPoP key signs the token request
// (retried once with the nonce the server asks for) and every request to
// the MCP server, with the DPoP scheme, ath and the server's nonce after
// its use_dpop_nonce challenge; each proof has its own jti.
func TestDPoPTokenAndResource(t *testing.T) {
	key, err := NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	var tokenCalls, mcpCalls atomic.Int32
	jtis := map[any]bool{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			tokenCalls.Add(1)
			c := checkProof(t, r.Header.Get("DPoP"), "POST", srv.URL+"/token", "")
			if c["nonce"] != "as-nonce" {
				w.Header().Set("DPoP-Nonce", "as-nonce")
				w.WriteHeader(400)
				_, _ = w.Write([]byte(`{"error":"use_dpop_nonce"}`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-dpop", "token_type": "DPoP", "expires_in": 3600})
		case "/mcp":
			mcpCalls.Add(1)
			if r.Header.Get("Authorization") != "DPoP tok-dpop" {
				w.WriteHeader(401)
				return
			}
			c := checkProof(t, r.Header.Get("DPoP"), r.Method, srv.URL+"/mcp?x=1", "tok-dpop")
			if jtis[c["jti"]] {
				t.Errorf("jti %v reused", c["jti"])
			}
			jtis[c["jti"]] = true
			if c["nonce"] != "rs-nonce" {
				w.Header().Set("DPoP-Nonce", "rs-nonce")
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
				w.WriteHeader(401)
				return
			}
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	c := &Client{}
	tok, err := c.Refresh(context.Background(), srv.URL+"/token", srv.URL, ClientAuth{ClientID: "c", Method: AuthNone, DPoPKey: key}, "ref", srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != SchemeDPoP || tokenCalls.Load() != 2 {
		t.Fatalf("token type %q after %d calls", tok.Type, tokenCalls.Load())
	}
	res := &Result{Discovery: &Discovery{ServerURL: srv.URL + "/mcp", Resource: srv.URL + "/mcp", AS: &AuthServer{Issuer: srv.URL, TokenEndpoint: srv.URL + "/token"}},
		Client: ClientAuth{ClientID: "c", Method: AuthNone, DPoPKey: key}, Token: tok, Grant: GrantAuthorizationCode}
	p := ProfileOf("", res, time.Now())
	if p.OAuth.TokenType != SchemeDPoP || p.OAuth.DPoPKey != key {
		t.Fatalf("profile %+v", p.OAuth)
	}
	k := fileKeeper{home: t.TempDir(), c: c}
	a := NewAuthorizer(c, k, p)
	hc := &http.Client{Transport: a.Wrap(http.DefaultTransport)}
	for i := 0; i < 2; i++ {
		resp, err := hc.Post(srv.URL+"/mcp?x=1", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	// One nonce challenge, then the nonce is kept for the next request.
	if n := mcpCalls.Load(); n != 3 {
		t.Fatalf("%d MCP requests, want 3", n)
	}
}

// TestDPoPNotOffered: without a proof sent, a DPoP token is not a Bearer
// token and is refused.
func TestDPoPNotOffered(t *testing.T) {
	_, err := DecodeToken(200, []byte(`{"access_token":"t","token_type":"DPoP"}`), time.Now())
	if codeOf(err) != CodeNotBearer {
		t.Fatalf("got %v", err)
	}
}

func TestParseDPoPNonce(t *testing.T) {
	for v, ok := range map[string]bool{"abc-._~+/=": true, "": false, `a"b`: false, `a\b`: false, "a b": false, "é": false, strings.Repeat("n", maxNonceBytes+1): false} {
		if _, got := ParseDPoPNonce(v); got != ok {
			t.Errorf("ParseDPoPNonce(%q) = %v", v, got)
		}
	}
}

// FuzzParseDPoPNonce: whatever a server sends as DPoP-Nonce, an accepted
// nonce is bounded visible ASCII that cannot break a JSON claim or a
// header.
func FuzzParseDPoPNonce(f *testing.F) {
	for _, s := range []string{"abc", "", "a\"b", "\x00", "n\r\nX: y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, ok := ParseDPoPNonce(v)
		if !ok {
			return
		}
		if n != v || len(n) > maxNonceBytes || strings.ContainsAny(n, "\"\\ \r\n\x00") {
			t.Fatalf("accepted %q", v)
		}
	})
}
