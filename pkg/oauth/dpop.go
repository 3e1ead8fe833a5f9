package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// DPoP (RFC 9449): when the authorization server lists ES256 in
// dpop_signing_alg_values_supported, a login makes a P-256 key of its own,
// kept in the profile beside its other secrets, and every token request
// and every request to the MCP server carries a fresh proof signed with
// it; the token is sent with the DPoP scheme (docs/mcp.md, "Login").

// SchemeDPoP is the Authorization scheme (and token_type) of a DPoP-bound
// token.
const SchemeDPoP = "DPoP"

// maxNonceBytes bounds a server's DPoP-Nonce (RFC 9449 §8: an opaque
// string; servers send a few dozen bytes).
const maxNonceBytes = 1024

// supportsDPoP reports whether as accepts ES256 DPoP proofs.
func (m *AuthServer) supportsDPoP() bool {
	return slices.Contains(m.DPoPSigningAlgValuesSupported, "ES256")
}

// NewDPoPKey makes a DPoP proof key: EC P-256, PKCS#8 PEM.
func NewDPoPKey() (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// ParseDPoPNonce checks a DPoP-Nonce header value: 1*NQCHAR (RFC 9449
// §8.1: visible ASCII but the double quote and backslash), at most
// maxNonceBytes. A value that is not one is ignored (ok false).
func ParseDPoPNonce(v string) (string, bool) {
	if v == "" || len(v) > maxNonceBytes {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return v, true
}

// DPoPProof signs a proof for a request of method to target (its query
// and fragment dropped, RFC 9449 §4.2) at now, with the server's nonce
// when it gave one and, for a resource request, the hash of the access
// token (ath).
func DPoPProof(keyPEM, method, target, nonce, accessToken string, now time.Time) (string, error) {
	signer, alg, err := ParsePrivateKey(keyPEM, "ES256")
	if err != nil {
		return "", err
	}
	k, ok := signer.(*ecdsa.PrivateKey)
	if !ok || alg != "ES256" {
		return "", errs.Failed(CodeTokenFailed, "the DPoP key is not EC P-256")
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", errs.Failed(CodeTokenFailed, "cannot make a DPoP proof for an invalid URL")
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	var x, y [32]byte
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		return "", err
	}
	raw := pub.Bytes() // 0x04 || X || Y
	copy(x[:], raw[1:33])
	copy(y[:], raw[33:65])
	hdr, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES256",
		"jwk": map[string]string{"kty": "EC", "crv": "P-256", "x": b64.EncodeToString(x[:]), "y": b64.EncodeToString(y[:])}})
	claims := map[string]any{"jti": randomString(16), "htm": method, "htu": u.String(), "iat": now.Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = b64.EncodeToString(sum[:])
	}
	body, _ := json.Marshal(claims)
	input := b64.EncodeToString(hdr) + "." + b64.EncodeToString(body)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	fill(sig[:32], r)
	fill(sig[32:], s)
	return input + "." + b64.EncodeToString(sig), nil
}

// isNonceChallenge reports whether a token endpoint's error body or a
// resource's challenge asks for a DPoP nonce.
func isNonceChallenge(errCode string) bool { return strings.EqualFold(errCode, "use_dpop_nonce") }
