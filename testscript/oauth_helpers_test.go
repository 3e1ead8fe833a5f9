package testscript

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// oauthKit is mcp login's: a fake MCP server guarded by a fake OAuth
// authorization server (oauthfake), a browser that approves at once
// (oauthbrowser), and a user who pastes the redirected address back
// (oauthpaste).
func oauthKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"oauthfake":    oauthFakeMain,
			"oauthbrowser": oauthBrowserMain,
			"oauthpaste":   oauthPasteMain,
		},
		cmds: map[string]scriptCmd{"file-mode": cmdFileMode, "workload-jwt": cmdWorkloadJWT, "id-token": cmdIDToken, "oauthfake-stats": cmdOAuthFakeStats, "oauth-expire": cmdOAuthExpire},
		conditions: map[string]func() (bool, error){
			// The TypeScript SDK's own OAuth example server (a dependency
			// of the server-everything peer).
			"ts-sdk-oauth-example": peerCondition("@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"),
		},
	}
}

// file-mode PATH MODE: PATH's permission bits are MODE (octal).
func cmdFileMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: file-mode PATH MODE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fmt.Sprintf("%04o", fi.Mode().Perm()); got != args[1] {
		ts.Fatalf("%s has mode %s, not %s", args[0], got, args[1])
	}
}

// oauthFakeModes are the fake's behaviours: "ok" is a well-behaved server,
// the others break one rule each.
var oauthFakeModes = map[string]string{
	"ok":                "a conforming MCP server and authorization server",
	"short":             "tokens that expire in 30 s (every use refreshes) with rotated refresh tokens",
	"invalid-once":      "the first access token is answered 401 invalid_token once",
	"step-up":           "tools/call needs scope write: 403 insufficient_scope",
	"issuer-mismatch":   "the authorization-server metadata names another issuer",
	"resource-mismatch": "the protected-resource metadata names another resource",
	"wrong-state":       "the redirect carries another state",
	"wrong-iss":         "the redirect carries another iss",
	"not-bearer":        "the token response is not a Bearer token",
	"big-metadata":      "the protected-resource metadata is 1 MiB",
	"slow-metadata":     "the protected-resource metadata never comes",
	"cross-origin":      "WWW-Authenticate points the metadata at another origin",
	"insecure":          "the authorization endpoint is plain http on another host",
	"no-pkce":           "the metadata does not advertise S256",
	"slow-token":        "the token endpoint never answers",
	"open-initialize":   "initialize needs no token (the requests after it do); the resource metadata lists scope profile, the 401 asks for read",
	"dpop":              "DPoP-bound tokens (RFC 9449): ES256 proofs checked on the token and MCP requests, each server asking for its nonce once",
	"dpop-unasked":      "the token endpoint answers token_type DPoP though it advertises no DPoP and got no proof",
	"xaa":               "cross-app access: an enterprise IdP at BASE/idp exchanges an ID token for an ID-JAG (RFC 8693), which the authorization server takes as a JWT bearer grant for client xaa-client (no refresh token)",
	"xaa-wrong-type":    "cross-app access whose IdP answers the exchange with an access token, not an ID-JAG",
}

// The cross-app fake's clients: clawkit's at the IdP (public, or with
// a secret) and at the MCP server's authorization server (client_secret_basic).
const (
	xaaIDPClient = "idp-client"
	xaaIDPSecret = "idp-s3cret-value"
	xaaClient    = "xaa-client"
	xaaSecret    = "xaa-s3cret-value"
)

type oauthFake struct {
	mode  string
	base  string
	mcp   http.Handler
	mu    sync.Mutex
	codes map[string]url.Values // code → the authorization request
	// access token → granted scopes; refresh token → granted scopes.
	access  map[string]string
	refresh map[string]string
	invalid map[string]bool
	stats   map[string]int
	// jags are the ID-JAGs the IdP issued (cross-app), with their claims.
	jags map[string]map[string]any
}

// oauthfake MODE URLFILE: serves the MCP endpoint BASE/mcp and the
// authorization server at BASE on 127.0.0.1, writes BASE/mcp to URLFILE
// once it accepts connections, and serves until killed (10 minutes at
// most). GET BASE/stats is its counters as JSON.
func oauthFakeMain() {
	if len(os.Args) != 3 || oauthFakeModes[os.Args[1]] == "" {
		fmt.Fprintln(os.Stderr, "usage: oauthfake MODE URLFILE")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "oauthfake", Version: "1.0.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "echoes its message"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	f := &oauthFake{mode: os.Args[1], base: "http://" + ln.Addr().String(),
		mcp:   sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}),
		codes: map[string]url.Values{}, access: map[string]string{}, refresh: map[string]string{}, invalid: map[string]bool{}, stats: map[string]int{},
		jags: map[string]map[string]any{}}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	// URLFILE.idp names the cross-app modes' IdP token endpoint and
	// URLFILE.idp-issuer its issuer; they are written first, as URLFILE is the signal that all is served.
	tmp := os.Args[2] + ".tmp"
	if err := os.WriteFile(os.Args[2]+".idp", []byte(f.base+"/idp/token"), 0o644); err != nil || os.WriteFile(os.Args[2]+".idp-issuer", []byte(f.base+"/idp"), 0o644) != nil {
		fmt.Fprintln(os.Stderr, "oauthfake: cannot write", os.Args[2]+".idp")
		os.Exit(1)
	}
	if err := os.WriteFile(tmp, []byte(f.base+"/mcp"), 0o644); err != nil || os.Rename(tmp, os.Args[2]) != nil {
		fmt.Fprintln(os.Stderr, "oauthfake: cannot write", os.Args[2])
		os.Exit(1)
	}
	go func() { time.Sleep(10 * time.Minute); os.Exit(3) }()
	_ = srv.Serve(ln)
}

func fakeRandom(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *oauthFake) count(k string) {
	f.mu.Lock()
	f.stats[k]++
	f.mu.Unlock()
}

func (f *oauthFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stats":
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, f.stats)
	case "/mcp":
		f.serveMCP(w, r)
	case "/open":
		f.mcp.ServeHTTP(w, r) // an MCP endpoint that asks for no token
	case "/.well-known/oauth-protected-resource/mcp":
		f.count("prm")
		switch f.mode {
		case "slow-metadata":
			<-r.Context().Done()
			return
		case "big-metadata":
			writeJSON(w, 200, map[string]any{"resource": f.base + "/mcp", "authorization_servers": []string{f.base}, "padding": strings.Repeat("x", 1<<20)})
			return
		}
		res := f.base + "/mcp"
		if f.mode == "resource-mismatch" {
			res = "https://other.example/mcp"
		}
		supported := []string{"read"}
		if f.mode == "open-initialize" {
			supported = []string{"profile"}
		}
		writeJSON(w, 200, map[string]any{"resource": res, "authorization_servers": []string{f.base}, "scopes_supported": supported})
	case "/.well-known/oauth-authorization-server":
		f.count("asm")
		iss := f.base
		if f.mode == "issuer-mismatch" {
			iss = f.base + "/elsewhere"
		}
		authz := f.base + "/authorize"
		if f.mode == "insecure" {
			authz = "http://auth.example/authorize"
		}
		m := map[string]any{"issuer": iss, "authorization_endpoint": authz, "token_endpoint": f.base + "/token",
			"registration_endpoint": f.base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
			"code_challenge_methods_supported":               []string{"S256"},
			"scopes_supported":                               []string{"read", "write", "offline_access"},
			"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
			"authorization_response_iss_parameter_supported": true}
		if f.mode == "no-pkce" {
			delete(m, "code_challenge_methods_supported")
		}
		if f.mode == "dpop" {
			m["dpop_signing_alg_values_supported"] = []string{"ES256"}
		}
		writeJSON(w, 200, m)
	case "/register":
		f.count("register")
		var req map[string]any
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
		if req["application_type"] != "native" {
			writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata", "error_description": "application_type must be native"})
			return
		}
		writeJSON(w, 201, map[string]any{"client_id": fakeRandom("client-"), "token_endpoint_auth_method": "none", "redirect_uris": req["redirect_uris"]})
	case "/authorize":
		f.authorize(w, r)
	case "/token":
		f.token(w, r)
	case "/idp/token":
		f.idpToken(w, r)
	case "/idp/.well-known/openid-configuration":
		f.count("idp_metadata")
		writeJSON(w, 200, map[string]any{"issuer": f.base + "/idp", "token_endpoint": f.base + "/idp/token", "jwks_uri": f.base + "/idp/jwks",
			"grant_types_supported": []string{"urn:ietf:params:oauth:grant-type:token-exchange"}})
	default:
		http.NotFound(w, r)
	}
}

func (f *oauthFake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ru, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || ru.Hostname() != "127.0.0.1" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("response_type") != "code" || q.Get("resource") != f.base+"/mcp" || q.Get("state") == "" {
		http.Error(w, "bad authorization request", 400)
		return
	}
	code := fakeRandom("code-")
	f.mu.Lock()
	f.codes[code] = q
	f.mu.Unlock()
	state, iss := q.Get("state"), f.base
	if f.mode == "wrong-state" {
		state += "x"
	}
	if f.mode == "wrong-iss" {
		iss = "https://evil.example"
	}
	rq := ru.Query()
	rq.Set("code", code)
	rq.Set("state", state)
	rq.Set("iss", iss)
	ru.RawQuery = rq.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

func (f *oauthFake) issue(w http.ResponseWriter, scopes string) {
	tok, ref := fakeRandom("tok-"), fakeRandom("ref-")
	f.mu.Lock()
	f.access[tok] = scopes
	f.refresh[ref] = scopes
	if f.mode == "invalid-once" && f.stats["issued"] == 0 {
		f.invalid[tok] = true
	}
	f.stats["issued"]++
	f.mu.Unlock()
	typ := "Bearer"
	switch f.mode {
	case "not-bearer":
		typ = "N_A"
	case "dpop", "dpop-unasked":
		typ = "DPoP"
	}
	exp := 3600
	if f.mode == "short" {
		exp = 30
	}
	out := map[string]any{"access_token": tok, "token_type": typ, "expires_in": exp, "refresh_token": ref, "scope": scopes}
	if strings.HasPrefix(f.mode, "xaa") {
		delete(out, "refresh_token") // a new token needs a new ID-JAG
	}
	writeJSON(w, 200, out)
}

func (f *oauthFake) token(w http.ResponseWriter, r *http.Request) {
	if f.mode == "slow-token" {
		<-r.Context().Done()
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	fail := func(e string) { writeJSON(w, 400, map[string]string{"error": e}) }
	if f.mode == "dpop" {
		nonce, err := checkDPoPProof(r.Header.Get("DPoP"), "POST", f.base+"/token", "")
		if err != nil {
			f.count("bad-proof")
			writeJSON(w, 400, map[string]string{"error": "invalid_dpop_proof", "error_description": err.Error()})
			return
		}
		if nonce != "as-nonce-1" {
			f.count("as-nonce-challenge")
			w.Header().Set("DPoP-Nonce", "as-nonce-1")
			fail("use_dpop_nonce")
			return
		}
	}
	if r.PostForm.Get("resource") != f.base+"/mcp" {
		fail("invalid_target")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		f.count("code")
		f.mu.Lock()
		q, ok := f.codes[r.PostForm.Get("code")]
		delete(f.codes, r.PostForm.Get("code"))
		f.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || r.PostForm.Get("redirect_uri") != q.Get("redirect_uri") {
			fail("invalid_grant")
			return
		}
		f.issue(w, q.Get("scope"))
	case "refresh_token":
		f.count("refresh")
		f.mu.Lock()
		scopes, ok := f.refresh[r.PostForm.Get("refresh_token")]
		delete(f.refresh, r.PostForm.Get("refresh_token")) // rotated: one use
		f.mu.Unlock()
		if !ok {
			fail("invalid_grant")
			return
		}
		f.issue(w, scopes)
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		f.count("jwt_bearer")
		if strings.HasPrefix(f.mode, "xaa") {
			f.jwtBearerIDJAG(w, r)
			return
		}
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		var claims map[string]any
		if len(parts) == 3 {
			b, _ := base64.RawURLEncoding.DecodeString(parts[1])
			_ = json.Unmarshal(b, &claims)
		}
		exp, _ := claims["exp"].(float64)
		if claims["aud"] != f.base || int64(exp) < time.Now().Unix() {
			fail("invalid_grant")
			return
		}
		f.issue(w, r.PostForm.Get("scope"))
	case "client_credentials":
		f.count("client_credentials")
		id, secret, basic := r.BasicAuth()
		switch {
		case basic:
			if id != "ci-client" || secret != "ci-s3cret-value" {
				writeJSON(w, 401, map[string]string{"error": "invalid_client"})
				return
			}
		case r.PostForm.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
			parts := strings.Split(r.PostForm.Get("client_assertion"), ".")
			var claims map[string]any
			if len(parts) == 3 {
				b, _ := base64.RawURLEncoding.DecodeString(parts[1])
				_ = json.Unmarshal(b, &claims)
			}
			if claims["iss"] != "ci-client" || claims["sub"] != "ci-client" || claims["aud"] != f.base {
				writeJSON(w, 401, map[string]string{"error": "invalid_client"})
				return
			}
		default:
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		f.issue(w, r.PostForm.Get("scope"))
	default:
		fail("unsupported_grant_type")
	}
}

// idpToken is the enterprise IdP's token endpoint (cross-app access):
// an RFC 8693 token exchange of an ID token it issued (iss BASE/idp, aud
// its client idp-client, not expired; the signature is not checked) for
// an ID-JAG whose audience is the authorization server's issuer and whose
// resource is the MCP server, as the MCP extension asks.
func (f *oauthFake) idpToken(w http.ResponseWriter, r *http.Request) {
	f.count("idp_exchange")
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	fail := func(e, d string) { writeJSON(w, 400, map[string]string{"error": e, "error_description": d}) }
	q := r.PostForm
	switch {
	case q.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
		fail("unsupported_grant_type", "token exchange only")
		return
	case q.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" || q.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token":
		fail("invalid_request", "requested_token_type or subject_token_type")
		return
	case q.Get("audience") != f.base || q.Get("resource") != f.base+"/mcp":
		fail("invalid_target", "audience or resource")
		return
	}
	// A public client names itself; a confidential one authenticates
	// with HTTP Basic.
	if id, secret, basic := r.BasicAuth(); basic && (id != xaaIDPClient || secret != xaaIDPSecret) || !basic && q.Get("client_id") != xaaIDPClient {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	claims := jwtClaims(q.Get("subject_token"))
	exp, _ := claims["exp"].(float64)
	if claims["iss"] != f.base+"/idp" || claims["aud"] != xaaIDPClient || int64(exp) < time.Now().Unix() {
		f.count("idp_refused")
		// The refusal echoes the token, as careless servers do: clawkit
		// must not print it.
		fail("invalid_grant", "the ID token is not valid for this client: "+q.Get("subject_token"))
		return
	}
	jag := fakeJWT(map[string]string{"alg": "ES256", "typ": "oauth-id-jag+jwt"}, map[string]any{
		"iss": f.base + "/idp", "sub": claims["sub"], "aud": q.Get("audience"), "resource": q.Get("resource"),
		"client_id": xaaClient, "scope": q.Get("scope"), "exp": time.Now().Unix() + 300, "jti": fakeRandom("jti-")})
	typ := "urn:ietf:params:oauth:token-type:id-jag"
	if f.mode == "xaa-wrong-type" {
		typ = "urn:ietf:params:oauth:token-type:access_token"
	}
	f.mu.Lock()
	f.jags[jag] = claims
	f.mu.Unlock()
	writeJSON(w, 200, map[string]any{"access_token": jag, "issued_token_type": typ, "token_type": "N_A", "expires_in": 300})
}

// jwtBearerIDJAG is the authorization server's side of cross-app access:
// the client authenticates (client_secret_basic) and presents an ID-JAG
// the IdP issued for it, once.
func (f *oauthFake) jwtBearerIDJAG(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != xaaClient || secret != xaaSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	jag := r.PostForm.Get("assertion")
	f.mu.Lock()
	_, known := f.jags[jag]
	delete(f.jags, jag)
	f.mu.Unlock()
	claims := jwtClaims(jag)
	if !known || claims["aud"] != f.base || claims["client_id"] != id || claims["resource"] != f.base+"/mcp" {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	f.count("id_jag_accepted")
	f.issue(w, r.PostForm.Get("scope"))
}

// jwtClaims decodes a JWT's claims without verifying it (nil when it is
// not one).
func jwtClaims(jwt string) map[string]any {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(b, &claims)
	return claims
}

// fakeJWT is a JWT of these header and claims with a dummy signature.
func fakeJWT(hdr map[string]string, claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(hdr)
	c, _ := json.Marshal(claims)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(c) + "." + enc.EncodeToString([]byte("signature"))
}

func (f *oauthFake) serveMCP(w http.ResponseWriter, r *http.Request) {
	prm := f.base + "/.well-known/oauth-protected-resource/mcp"
	if f.mode == "cross-origin" {
		prm = "http://localhost:1/.well-known/oauth-protected-resource/mcp"
	}
	if f.mode == "open-initialize" && r.Method == http.MethodPost {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			f.count("open-initialize")
			f.mcp.ServeHTTP(w, r)
			return
		}
	}
	scheme := "Bearer "
	if f.mode == "dpop" {
		scheme = "DPoP "
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), scheme)
	if ok && f.mode == "dpop" {
		nonce, err := checkDPoPProof(r.Header.Get("DPoP"), r.Method, f.base+"/mcp", tok)
		if err != nil {
			f.count("bad-proof")
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if nonce != "rs-nonce-1" {
			f.count("rs-nonce-challenge")
			w.Header().Set("DPoP-Nonce", "rs-nonce-1")
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			http.Error(w, "nonce", http.StatusUnauthorized)
			return
		}
	}
	f.mu.Lock()
	scopes, known := f.access[tok]
	bad := f.invalid[tok]
	delete(f.invalid, tok)
	f.mu.Unlock()
	if !ok || !known || bad {
		f.count("401")
		ch := fmt.Sprintf(`Bearer resource_metadata=%q, scope="read"`, prm)
		if known {
			ch += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", ch)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	f.count("mcp")
	if f.mode == "step-up" && r.Method == http.MethodPost {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && !strings.Contains(" "+scopes+" ", " write ") {
			f.count("403")
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="read write", resource_metadata=%q`, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	f.mcp.ServeHTTP(w, r)
}

// oauthbrowser URL: a browser whose user approves at once: it GETs URL
// and follows the redirects (to clawkit's loopback listener).
func oauthBrowserMain() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oauthbrowser URL")
		os.Exit(2)
	}
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "oauthbrowser:", err)
		os.Exit(1)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// oauthpaste CMD ARGS...: runs CMD (clawkit mcp login --no-browser …) as a
// user on another machine would: reads the authorization URL it prints on
// stderr, "approves" it (GET without following the redirect) and pastes
// the address it was sent to on CMD's stdin. CMD's stdout and stderr are
// passed through; its exit code is oauthpaste's.
func oauthPasteMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: oauthpaste CMD ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout = os.Stdout
	in, err1 := cmd.StdinPipe()
	errp, err2 := cmd.StderrPipe()
	if err1 != nil || err2 != nil || cmd.Start() != nil {
		fmt.Fprintln(os.Stderr, "oauthpaste: cannot start", os.Args[1])
		os.Exit(1)
	}
	urlRE := regexp.MustCompile(`^https?://\S+/authorize\?\S+$`)
	sc := bufio.NewScanner(errp)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if !urlRE.MatchString(line) {
			continue
		}
		c := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(line)
		if err != nil {
			fmt.Fprintln(os.Stderr, "oauthpaste:", err)
			continue
		}
		_ = resp.Body.Close()
		if _, err := fmt.Fprintln(in, resp.Header.Get("Location")); err != nil {
			fmt.Fprintln(os.Stderr, "oauthpaste:", err)
		}
		_ = in.Close()
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		os.Exit(1)
	}
}

// workload-jwt FILE URL SECONDS: writes to FILE a workload identity token (a
// JWT as a CI provider issues one) whose audience is URL's origin (the
// fake's issuer), expiring in SECONDS (negative: already expired). The
// fake checks its claims, not its signature.
func cmdWorkloadJWT(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: workload-jwt FILE URL SECONDS")
	}
	u, err := url.Parse(args[1])
	ts.Check(err)
	aud := u.Scheme + "://" + u.Host
	var secs int64
	_, err = fmt.Sscan(args[2], &secs)
	ts.Check(err)
	enc := base64.RawURLEncoding
	hdr, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": "https://ci.example", "sub": "repo:clawkit", "aud": aud, "exp": time.Now().Unix() + secs})
	jwt := enc.EncodeToString(hdr) + "." + enc.EncodeToString(claims) + "." + enc.EncodeToString([]byte("signature"))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(jwt+"\n"), 0o600))
}

// id-token FILE URL CLIENT SECONDS [LINE...]: writes to FILE (mode 0600) an
// ID token as the cross-app fake's enterprise IdP (URL's origin + /idp)
// issues one to its client CLIENT, expiring in SECONDS (negative: already
// expired), then each LINE (what else a login reads from stdin).
func cmdIDToken(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: id-token FILE URL CLIENT SECONDS [LINE...]")
	}
	u, err := url.Parse(args[1])
	ts.Check(err)
	var secs int64
	_, err = fmt.Sscan(args[3], &secs)
	ts.Check(err)
	jwt := fakeJWT(map[string]string{"alg": "ES256", "typ": "JWT"}, map[string]any{
		"iss": u.Scheme + "://" + u.Host + "/idp", "sub": "user@example.com", "aud": args[2], "exp": time.Now().Unix() + secs})
	lines := append([]string{jwt}, args[4:]...)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

// oauthfake-stats URL: prints the counters of the oauthfake serving URL
// (its MCP endpoint) as JSON on stdout.
func cmdOAuthFakeStats(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: oauthfake-stats URL")
	}
	resp, err := http.Get(strings.TrimSuffix(args[0], "/mcp") + "/stats")
	ts.Check(err)
	b, err := io.ReadAll(resp.Body)
	ts.Check(resp.Body.Close())
	ts.Check(err)
	_, _ = ts.Stdout().Write(b)
}

// oauth-expire: makes every OAuth profile in the script's home expire a
// second ago, as the passing of time would (the next use renews it).
func cmdOAuthExpire(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: oauth-expire")
	}
	path := filepath.Join(ts.Getenv("CLAWKIT_HOME"), "credentials.json")
	b, err := os.ReadFile(path)
	ts.Check(err)
	var doc map[string]any
	ts.Check(json.Unmarshal(b, &doc))
	past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	for _, p := range doc["profiles"].(map[string]any) {
		if o, ok := p.(map[string]any)["oauth"].(map[string]any); ok {
			o["expiresAt"] = past
		}
	}
	b, err = json.Marshal(doc)
	ts.Check(err)
	ts.Check(os.WriteFile(path, b, 0o600))
}

// checkDPoPProof verifies a DPoP proof as an RFC 9449 server does: typ,
// ES256 signature by the public key in its header (no private part),
// htm, htu, a recent iat and, for a resource request, ath the hash of
// token. It answers the proof's nonce.
func checkDPoPProof(proof, method, htu, token string) (string, error) {
	enc := base64.RawURLEncoding
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return "", errors.New("no DPoP proof")
	}
	var hdr struct {
		Typ, Alg string
		JWK      map[string]string
	}
	var claims map[string]any
	hb, _ := enc.DecodeString(parts[0])
	cb, _ := enc.DecodeString(parts[1])
	sig, _ := enc.DecodeString(parts[2])
	if json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(cb, &claims) != nil || hdr.Typ != "dpop+jwt" || hdr.Alg != "ES256" || hdr.JWK["d"] != "" || len(sig) != 64 {
		return "", errors.New("malformed DPoP proof")
	}
	x, _ := enc.DecodeString(hdr.JWK["x"])
	y, _ := enc.DecodeString(hdr.JWK["y"])
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return "", errors.New("DPoP proof key is not a P-256 point")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("DPoP proof signature does not verify")
	}
	iat, _ := claims["iat"].(float64)
	if claims["htm"] != method || claims["htu"] != htu || time.Since(time.Unix(int64(iat), 0)).Abs() > 5*time.Minute {
		return "", errors.New("DPoP proof htm, htu or iat wrong")
	}
	if token != "" {
		h := sha256.Sum256([]byte(token))
		if claims["ath"] != enc.EncodeToString(h[:]) {
			return "", errors.New("DPoP proof ath wrong")
		}
	}
	nonce, _ := claims["nonce"].(string)
	return nonce, nil
}
