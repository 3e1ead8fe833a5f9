package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TestSignatureVerifiesAndIsDeterministic: the .sig is base64 DER that
// ECDSA verification accepts, the same bytes sign the same way twice
// (RFC 6979), and both PEM forms openssl writes are read.
func TestSignatureVerifiesAndIsDeterministic(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{pemOf(t, "EC PRIVATE KEY", sec1), pemOf(t, "PRIVATE KEY", pkcs8)} {
		k, err := parseSigningKey(b)
		if err != nil {
			t.Fatal(err)
		}
		if !k.Equal(key) {
			t.Fatal("parsed another key")
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "SHA256SUMS")
	if err := os.WriteFile(p, []byte("abc  x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := signFile(key, p); err != nil {
		t.Fatal(err)
	}
	sig1, _ := os.ReadFile(p + ".sig")
	if err := signFile(key, p); err != nil {
		t.Fatal(err)
	}
	sig2, _ := os.ReadFile(p + ".sig")
	if string(sig1) != string(sig2) {
		t.Error("two signatures of the same bytes differ")
	}
	der, err := base64.StdEncoding.DecodeString(string(sig1))
	if err != nil {
		t.Fatalf("the .sig is not base64: %v", err)
	}
	h := sha256.Sum256([]byte("abc  x\n"))
	if !ecdsa.VerifyASN1(&key.PublicKey, h[:], der) {
		t.Error("the signature does not verify")
	}
	h = sha256.Sum256([]byte("abd  x\n"))
	if ecdsa.VerifyASN1(&key.PublicKey, h[:], der) {
		t.Error("the signature verifies other bytes")
	}
}

// TestSigningKeyRefusals: no PEM, another algorithm or curve, and a key
// file inside the repository are refused; no key at all means unsigned.
func TestSigningKeyRefusals(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a refusal test, never used to sign
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalECPrivateKey(p384)
	for name, b := range map[string][]byte{
		"not PEM":   []byte("hello"),
		"RSA":       pemOf(t, "PRIVATE KEY", rsaDER),
		"P-384":     pemOf(t, "EC PRIVATE KEY", p384DER),
		"encrypted": pemOf(t, "ENCRYPTED PRIVATE KEY", []byte{1}),
	} {
		if _, err := parseSigningKey(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	repo := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(key)
	inside := filepath.Join(repo, "keys", "release.key")
	if err := os.MkdirAll(filepath.Dir(inside), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, pemOf(t, "EC PRIVATE KEY", der), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSigningKey(repo, inside); err == nil || !strings.Contains(err.Error(), "inside the repository") {
		t.Errorf("a key inside the repository: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "release.key")
	if err := os.WriteFile(outside, pemOf(t, "EC PRIVATE KEY", der), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := loadSigningKey(repo, outside); err != nil || k == nil {
		t.Errorf("a key outside: %v", err)
	}
	t.Setenv(signingKeyEnv, "")
	if k, err := loadSigningKey(repo, ""); err != nil || k != nil {
		t.Errorf("no key: %v, %v", k, err)
	}
	t.Setenv(signingKeyEnv, string(pemOf(t, "EC PRIVATE KEY", der)))
	if k, err := loadSigningKey(repo, ""); err != nil || k == nil || !k.Equal(key) {
		t.Errorf("key from the environment: %v", err)
	}
}

// TestProvenanceStatement: an in-toto v1 statement with an SLSA v1
// predicate, subjects sorted with their SHA-256, the commit, the builder
// and the Go version; the same input gives the same bytes.
func TestProvenanceStatement(t *testing.T) {
	in := provenanceInput{
		facts:     facts{version: "v1.2.3", commit: strings.Repeat("a", 40), epoch: 1700000000, dirty: "false"},
		goVersion: "go1.26.8", builderID: defaultBuilderID, targets: []string{"linux/amd64"},
		subjects: map[string]string{"b.rpm": strings.Repeat("2", 64), "a.tar.gz": strings.Repeat("1", 64)},
		tools:    map[string]string{"nfpm": nfpmVersion},
	}
	b1, err := buildProvenance(in)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := buildProvenance(in)
	if string(b1) != string(b2) {
		t.Fatal("the same input gave different statements")
	}
	var st struct {
		Type          string `json:"_type"`
		PredicateType string
		Subject       []struct {
			Name   string
			Digest map[string]string
		}
		Predicate struct {
			BuildDefinition struct {
				ResolvedDependencies []struct{ Digest map[string]string }
			}
			RunDetails struct {
				Builder struct {
					ID      string
					Version map[string]string
				}
			}
		}
	}
	if err := json.Unmarshal(b1, &st); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %v %s %s %s %s", st.Type, st.PredicateType, st.Subject,
		st.Predicate.BuildDefinition.ResolvedDependencies[0].Digest["gitCommit"], st.Predicate.RunDetails.Builder.ID,
		st.Predicate.RunDetails.Builder.Version["go"], st.Predicate.RunDetails.Builder.Version["nfpm"])
	want := fmt.Sprintf("https://in-toto.io/Statement/v1 https://slsa.dev/provenance/v1 [{a.tar.gz map[sha256:%s]} {b.rpm map[sha256:%s]}] %s %s go1.26.8 %s",
		strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("a", 40), defaultBuilderID, nfpmVersion)
	if got != want {
		t.Errorf("statement:\n got %s\nwant %s", got, want)
	}
}

// TestImageIsReproducible: the same release archives give the same index
// digest whatever the output folder; an archive that does not match
// SHA256SUMS is refused.
func TestImageIsReproducible(t *testing.T) {
	mtime := time.Unix(1700000000, 0).UTC()
	rel := t.TempDir()
	src := t.TempDir()
	var sums strings.Builder
	for _, arch := range imageArches {
		bin := filepath.Join(src, arch)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho "+arch+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		lic := filepath.Join(src, "LICENSE")
		if err := os.WriteFile(lic, []byte("MIT\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		name := "clawkit_v1.2.3_linux_" + arch + ".tar.gz"
		if err := writeArchive(filepath.Join(rel, name), []file{{name: "clawkit", path: bin, mode: 0o755}, {name: "LICENSE", path: lic, mode: 0o644}}, mtime); err != nil {
			t.Fatal(err)
		}
		h, err := sha256File(filepath.Join(rel, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%s  %s\n", h, name)
	}
	if err := os.WriteFile(filepath.Join(rel, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d1, err := buildImage(rel, filepath.Join(t.TempDir(), "one"), "v1.2.3", "c0ffee", mtime)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := buildImage(rel, filepath.Join(t.TempDir(), "two", "deeper"), "v1.2.3", "c0ffee", mtime)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 || !strings.HasPrefix(d1, "sha256:") {
		t.Fatalf("digests %s and %s", d1, d2)
	}
	d3, err := buildImage(rel, filepath.Join(t.TempDir(), "three"), "v1.2.3", "beef", mtime)
	if err != nil {
		t.Fatal(err)
	}
	if d3 == d1 {
		t.Error("another revision label gave the same digest")
	}
	p := filepath.Join(rel, "clawkit_v1.2.3_linux_arm64.tar.gz")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bad")
	if _, err := buildImage(rel, out, "v1.2.3", "c0ffee", mtime); err == nil || !strings.Contains(err.Error(), "does not match SHA256SUMS") {
		t.Errorf("a tampered archive: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused build left an image layout")
	}
}
