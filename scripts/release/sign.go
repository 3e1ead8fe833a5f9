package main

// Signing (docs/release.md, "Signatures"): SHA256SUMS and the provenance
// statement are signed with an ECDSA P-256 key over their SHA-256. The
// signature file holds the ASN.1 DER signature in base64 on one line, the
// format `cosign verify-blob --key` reads; `openssl dgst -sha256 -verify`
// reads the same signature once base64-decoded. Signatures are
// deterministic (RFC 6979), so the same key and bytes give the same
// signature and the two-clone check can compare them byte for byte.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// signingKeyEnv holds the key itself (PEM) when no -signing-key file is
// given: CI secrets arrive as environment variables.
const signingKeyEnv = "CLAWKIT_SIGNING_KEY"

// loadSigningKey reads the key from file, else from $CLAWKIT_SIGNING_KEY;
// nil (unsigned release) when neither is set. A key file inside the
// repository is refused: the key must never be committed.
func loadSigningKey(repo, file string) (*ecdsa.PrivateKey, error) {
	var b []byte
	switch {
	case file != "":
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(repo, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("signing key %s is inside the repository; keep it outside (a file elsewhere or $%s)", file, signingKeyEnv)
		}
		if b, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
	case os.Getenv(signingKeyEnv) != "":
		b = []byte(os.Getenv(signingKeyEnv))
	default:
		return nil, nil
	}
	return parseSigningKey(b)
}

// parseSigningKey accepts an unencrypted PEM ECDSA P-256 private key, as
// `openssl ecparam -genkey` (SEC 1) or `openssl genpkey` (PKCS #8) write it.
func parseSigningKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("signing key: no PEM block (want an unencrypted ECDSA P-256 private key)")
	}
	var key any
	var err error
	switch blk.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("signing key: PEM block %q; want an unencrypted ECDSA P-256 private key (EC PRIVATE KEY or PRIVATE KEY)", blk.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("signing key: not an ECDSA P-256 key")
	}
	return ec, nil
}

// signFile writes path+".sig": the base64 DER signature of path's bytes.
func signFile(key *ecdsa.PrivateKey, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sig, err := sign(key, b)
	if err != nil {
		return err
	}
	return os.WriteFile(path+".sig", []byte(sig), 0o644)
}

// sign returns the base64 of the deterministic DER signature of b.
func sign(key *ecdsa.PrivateKey, b []byte) (string, error) {
	h := sha256.Sum256(b)
	// A nil random source asks for RFC 6979 deterministic signatures.
	der, err := key.Sign(nil, h[:], crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// publicKeyPEM is the key's public half as PKIX PEM (what verifiers take).
func publicKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
