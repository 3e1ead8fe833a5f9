// Package auth stores provider credentials (auth profiles) in
// <home>/credentials.json, mode 0600, written atomically. Secrets never leave
// this file: listings show the credential account fingerprint instead.
package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// maxFileBytes bounds credentials.json (a few profiles of short secrets).
const maxFileBytes = 4 << 20

// FileName is the credentials file's name inside the home.
const FileName = "credentials.json"

// Kinds of credential.
const (
	KindAPIKey = "api-key"
	KindOAuth  = "oauth"
	// KindHeader and KindBearer hold an HTTP header's value for an MCP
	// server (provider "mcp"): a header profile's secret is the value as
	// is, a bearer profile's a token sent as "Bearer TOKEN" (HeaderValue).
	// Such a value comes only from a profile, never from a command line
	// or config.json: mcp's --header NAME=@PROFILE (docs/mcp.md, "Over
	// HTTP") and a research job's --mcp-header (docs/research.md, "Tools")
	// both read them.
	KindHeader = "header"
	KindBearer = "bearer"
)

// Profile is one credential. Secret is only ever read by the provider that
// uses it; it is never printed.
type Profile struct {
	ID        string    `json:"-"`
	Provider  string    `json:"provider"`
	Kind      string    `json:"kind"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
	// OAuth is set on an MCP server's OAuth profile (clawkit mcp login):
	// Secret is then the access token (docs/mcp.md, "Login").
	OAuth *OAuth `json:"oauth,omitempty"`
}

// OAuth is the state of an MCP OAuth profile beside its access token. The
// refresh token, client secret and private key are secrets like Secret:
// never printed, never in Public.
type OAuth struct {
	Server        string    `json:"server"`
	Issuer        string    `json:"issuer"`
	Resource      string    `json:"resource"`
	Scopes        []string  `json:"scopes,omitempty"`
	ExpiresAt     time.Time `json:"expiresAt,omitzero"`
	IssuedAt      time.Time `json:"issuedAt,omitzero"`
	RefreshToken  string    `json:"refreshToken,omitempty"`
	TokenEndpoint string    `json:"tokenEndpoint"`
	Grant         string    `json:"grant"`
	ClientID      string    `json:"clientId"`
	ClientSecret  string    `json:"clientSecret,omitempty"`
	AuthMethod    string    `json:"authMethod"`
	PrivateKey    string    `json:"privateKey,omitempty"`
	SigningAlg    string    `json:"signingAlg,omitempty"`
	// DynamicClient marks a client registered by this login (RFC 7591),
	// whose redirect URI was that login's: a later login registers anew.
	DynamicClient bool `json:"dynamicClient,omitempty"`
	// DPoPKey is the PEM key that signs DPoP proofs (RFC 9449) for a
	// DPoP-bound token, TokenType "DPoP" (empty: Bearer). A secret.
	DPoPKey   string `json:"dpopKey,omitempty"`
	TokenType string `json:"tokenType,omitempty"`
	// IDPTokenEndpoint and IDPClientID name the enterprise IdP of a
	// cross-app login (grant jwt-bearer with an ID-JAG): not secrets, kept
	// so that an expired token without a refresh token says how to log
	// in again (a new ID-JAG needs a fresh ID token).
	IDPTokenEndpoint string `json:"idpTokenEndpoint,omitempty"`
	IDPClientID      string `json:"idpClientId,omitempty"`
}

// Secrets lists the profile's secret values (for redaction).
func (p Profile) Secrets() []string {
	out := []string{p.Secret}
	if o := p.OAuth; o != nil {
		out = append(out, o.RefreshToken, o.ClientSecret, o.PrivateKey, o.DPoPKey)
	}
	return out
}

// Account is the credential account fingerprint: the first 16 hex digits of
// SHA-256 of the secret. It identifies a credential without revealing it.
func (p Profile) Account() string { return Fingerprint(p.Secret) }

// Fingerprint computes the account fingerprint of a secret.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])[:16]
}

// Public is what listings show.
type Public struct {
	ID        string    `json:"id"`
	Provider  string    `json:"provider"`
	Kind      string    `json:"kind"`
	Account   string    `json:"account"`
	CreatedAt time.Time `json:"createdAt"`
	// An OAuth profile's issuer, resource, scopes and expiry (never a
	// token).
	Server    string    `json:"server,omitempty"`
	Issuer    string    `json:"issuer,omitempty"`
	Resource  string    `json:"resource,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// Public strips the secret.
func (p Profile) Public() Public {
	pub := Public{ID: p.ID, Provider: p.Provider, Kind: p.Kind, Account: p.Account(), CreatedAt: p.CreatedAt}
	if o := p.OAuth; o != nil {
		pub.Server, pub.Issuer, pub.Resource, pub.Scopes, pub.ExpiresAt = o.Server, o.Issuer, o.Resource, o.Scopes, o.ExpiresAt
	}
	return pub
}

type file struct {
	Version  int                `json:"version"`
	Profiles map[string]Profile `json:"profiles"`
}

// Store is the decoded credentials file.
type Store struct {
	path     string
	profiles map[string]Profile
}

// Load reads home's credentials; a missing file is empty.
func Load(home string) (*Store, error) {
	path := filepath.Join(home, FileName)
	s := &Store{path: path, profiles: map[string]Profile{}}
	data, err := fsx.ReadRegular(path, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, errs.Failed(CodeCredentialsUnreadable, "cannot read %s: %v", path, err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		// The parse error could quote a secret's bytes; keep only its class.
		return nil, errs.Failed(CodeInvalidCredentials, "%s is not a valid credentials file", path).
			WithHint("restore it from a backup or remove it and add the profiles again")
	}
	for id, p := range f.Profiles {
		p.ID = id
		s.profiles[id] = p
	}
	return s, nil
}

// Get returns a profile by id.
func (s *Store) Get(id string) (Profile, bool) {
	p, ok := s.profiles[id]
	return p, ok
}

// List returns every profile, sorted by id.
func (s *Store) List() []Profile {
	out := make([]Profile, 0, len(s.profiles))
	for _, p := range s.profiles {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ValidateID checks a profile id: printable, no whitespace, ≤ 128 bytes.
func ValidateID(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, " \t\r\n\x00/\\") {
		return errs.Usage(CodeInvalidProfileID, "invalid profile id %q", id).
			WithHint("use a short name without spaces or slashes, e.g. google:default")
	}
	return nil
}

// MaxSecretBytes bounds a credential: API keys are about 40 bytes and
// OAuth access tokens a few kilobytes. A longer one is refused whole,
// never cut to fit (a cut key would be stored and fail later, far from
// its cause).
const MaxSecretBytes = 16 << 10

// CheckNew validates a new profile's id and secret without a store.
func CheckNew(id, secret string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if strings.TrimSpace(secret) == "" {
		return errs.Usage(errs.CodeEmptySecret, "the credential for %s is empty", id).
			WithHint("pass a non-empty key with --api-key-env VAR or on stdin")
	}
	return CheckSecret(id, secret)
}

// CheckSecret refuses a credential that cannot be one: longer than
// MaxSecretBytes, not valid UTF-8, or holding a NUL or another control
// character (an API key or token is sent in an HTTP header, where such
// bytes are not allowed). The message never quotes the secret.
func CheckSecret(id, secret string) error {
	if len(secret) > MaxSecretBytes {
		return errs.Usage(errs.CodeInvalidSecret, "the credential for %s is %d bytes; the limit is %d", id, len(secret), MaxSecretBytes).
			WithHint("pass the key or token itself, not a file that holds more")
	}
	if !utf8.ValidString(secret) {
		return errs.Usage(errs.CodeInvalidSecret, "the credential for %s is not valid UTF-8", id).
			WithHint("pass the key or token as text")
	}
	for i, r := range secret {
		// U+FFFD is an invalid byte once the parameters were JSON (a
		// routed call): no key or token holds it.
		if r == utf8.RuneError {
			return errs.Usage(errs.CodeInvalidSecret, "the credential for %s is not valid UTF-8 (byte %d)", id, i).
				WithHint("pass the key or token as text")
		}
		if unicode.IsControl(r) {
			return errs.Usage(errs.CodeInvalidSecret, "the credential for %s holds control character %U at byte %d", id, r, i).
				WithHint("a key or token is one line of printable text; check what was piped in")
		}
	}
	return nil
}

// Add inserts a profile; an existing id is refused unless replace is set.
func (s *Store) Add(p Profile, replace bool) error {
	if err := CheckNew(p.ID, p.Secret); err != nil {
		return err
	}
	if _, ok := s.profiles[p.ID]; ok && !replace {
		return errs.Failed(CodeProfileExists, "auth profile %s already exists", p.ID).
			WithHint("remove it first with 'clawkit auth remove %s', or pass --replace", p.ID)
	}
	s.profiles[p.ID] = p
	return nil
}

// Remove deletes a profile.
func (s *Store) Remove(id string) error {
	if _, ok := s.profiles[id]; !ok {
		return errs.Failed(CodeProfileNotFound, "no auth profile %s", id).WithHint("list profiles with 'clawkit auth list'")
	}
	delete(s.profiles, id)
	return nil
}

// Save writes the file atomically with mode 0600.
func (s *Store) Save() error {
	f := file{Version: 1, Profiles: s.profiles}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(s.path, append(b, '\n'), 0o600); err != nil {
		return errs.Failed(CodeCredentialsWriteFailed, "cannot write %s: %v", s.path, err)
	}
	return nil
}

// WriteFailed is credentials_write_failed for path: an edit that could not
// be made (its edit lock cannot be taken, the file cannot be replaced).
func WriteFailed(path string, err error) error {
	return errs.Failed(CodeCredentialsWriteFailed, "cannot write %s: %v", path, err).
		WithHint("credentials.json and its edit lock %s must be regular files in a writable home", filepath.Base(path)+fsx.LockSuffix)
}

// Header is the HTTP header value of profile id (HeaderValue).
func (s *Store) Header(id string) (string, error) {
	p, ok := s.profiles[id]
	if !ok {
		return "", errs.Failed(CodeProfileNotFound, "no auth profile %s", id).
			WithHint("add it with: clawkit auth add %s --provider mcp --kind bearer --api-key-stdin", id)
	}
	return HeaderValue(p)
}

// IsHeaderKind reports whether kind is one whose secret stands for an
// HTTP header's value (KindHeader, KindBearer): the one test behind auth
// add --provider mcp, mcp's --header and research's --mcp-header.
func IsHeaderKind(kind string) bool {
	return kind == KindHeader || kind == KindBearer
}

// HeaderValue is the HTTP header value a header or bearer profile stands
// for. Other kinds are refused: an API key is not a header value.
func HeaderValue(p Profile) (string, error) {
	if !IsHeaderKind(p.Kind) {
		return "", errs.Usage(errs.CodeInvalidHeader, "auth profile %s is of kind %s, not header or bearer", p.ID, p.Kind).
			WithHint("add one with: clawkit auth add ID --provider mcp --kind bearer --api-key-stdin")
	}
	v := p.Secret
	if p.Kind == KindBearer {
		v = "Bearer " + p.Secret
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", errs.Usage(errs.CodeInvalidHeader, "auth profile %s holds a line break or NUL, which no header value may", p.ID)
	}
	return v, nil
}
