package main

// The container image (docs/release.md, "Container image"), built without
// a daemon with go-containerregistry (pinned in scripts/release/go.mod):
// an OCI image layout holding one multi-arch index (linux/amd64 and
// linux/arm64), each image made of two layers:
//   - a base: the CA certificates (Mozilla's roots as Go's
//     x509roots/fallback module ships them, so the bytes are pinned by
//     go.sum and not taken from the build machine), /tmp (1777) and the
//     home of the unprivileged user 65532 (0700);
//   - the released binary at /usr/local/bin/clawkit, taken from the
//     release archive after checking it against SHA256SUMS, and the license.
// The config runs as 65532:65532 and is dated SOURCE_DATE_EPOCH; every tar
// entry is normalised; so the index digest depends only on the commit.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// ggcrVersion is the pinned go-containerregistry (scripts/release/go.mod).
const ggcrVersion = "v0.22.1"

// imageUID is the unprivileged user the image runs as (distroless's nonroot).
const imageUID = 65532

// imageArches are the image's platforms (the linux release targets).
var imageArches = []string{"amd64", "arm64"}

// buildImage writes the OCI image layout of version into out (emptied
// first) from the release folder rel and returns the index digest.
func buildImage(rel, out, version, commit string, mtime time.Time) (string, error) {
	sums, err := readSums(filepath.Join(rel, "SHA256SUMS"))
	if err != nil {
		return "", err
	}
	base, err := baseLayer(mtime)
	if err != nil {
		return "", err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range imageArches {
		name := fmt.Sprintf("clawkit_%s_linux_%s.tar.gz", version, arch)
		files, err := readArchive(filepath.Join(rel, name), sums[name])
		if err != nil {
			return "", err
		}
		bin, ok := files["clawkit"]
		if !ok {
			return "", fmt.Errorf("%s holds no clawkit binary", name)
		}
		license, ok := files["LICENSE"]
		if !ok {
			return "", fmt.Errorf("%s holds no LICENSE", name)
		}
		app, err := layerOf([]tarEntry{
			{name: "usr/", dir: true, mode: 0o755},
			{name: "usr/local/", dir: true, mode: 0o755},
			{name: "usr/local/bin/", dir: true, mode: 0o755},
			{name: "usr/local/bin/clawkit", mode: 0o755, body: bin},
			{name: "usr/share/", dir: true, mode: 0o755},
			{name: "usr/share/doc/", dir: true, mode: 0o755},
			{name: "usr/share/doc/clawkit/", dir: true, mode: 0o755},
			{name: "usr/share/doc/clawkit/LICENSE", mode: 0o644, body: license},
		}, mtime)
		if err != nil {
			return "", err
		}
		img, err := image(arch, version, commit, mtime, base, app)
		if err != nil {
			return "", err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return "", err
	}
	tag := strings.ReplaceAll(version, "+", "-") // a tag may not hold "+"
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// image is one platform's image: config first, then the two layers.
func image(arch, version, commit string, mtime time.Time, base, app v1.Layer) (v1.Image, error) {
	cfg := &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: mtime},
		Config: v1.Config{
			Entrypoint: []string{"/usr/local/bin/clawkit"},
			Cmd:        []string{"--help"},
			Env:        []string{"HOME=/home/clawkit", "PATH=/usr/local/bin"},
			User:       fmt.Sprintf("%d:%d", imageUID, imageUID),
			WorkingDir: "/home/clawkit",
			Labels: map[string]string{
				"org.opencontainers.image.title":    "clawkit",
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
				"org.opencontainers.image.licenses": "MIT",
				"org.opencontainers.image.source":   pkgHomepage,
			},
		},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: mtime}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "clawkit release: CA certificates, /tmp, /home/clawkit", Comment: "x509roots/fallback"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "clawkit release: the linux/" + arch + " binary from its release archive"}},
	)
}

// baseLayer holds the CA bundle and the two folders the binary needs.
func baseLayer(mtime time.Time) (v1.Layer, error) {
	var certs bytes.Buffer
	for r := range bundle.Roots() {
		// A PEM bundle cannot carry NSS's extra constraints (distrust
		// after a date): such roots are left out rather than trusted more.
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if certs.Len() == 0 {
		return nil, errors.New("the CA bundle is empty")
	}
	return layerOf([]tarEntry{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: certs.Bytes()},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/clawkit/", dir: true, mode: 0o700, uid: imageUID},
		{name: "tmp/", dir: true, mode: 0o1777},
	}, mtime)
}

type tarEntry struct {
	name string
	dir  bool
	mode int64
	uid  int
	body []byte
}

// layerOf is a gzip-compressed OCI layer of entries, in the order given,
// with normalised headers (USTAR, one mtime, numeric owners only).
func layerOf(entries []tarEntry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// readSums parses SHA256SUMS into name -> hex.
func readSums(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (run make release first)", err)
	}
	sums := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		h, n, ok := strings.Cut(l, "  ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, l)
		}
		sums[n] = h
	}
	return sums, nil
}

// readArchive returns a release archive's regular files after checking
// its SHA-256 against want.
func readArchive(path, want string) (map[string][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (run make release first)", err)
	}
	h := sha256.Sum256(b)
	if got := hex.EncodeToString(h[:]); want == "" || got != want {
		return nil, fmt.Errorf("%s does not match SHA256SUMS (sha256 %s, listed %q); run make release", filepath.Base(path), got, want)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[hd.Name] = body
	}
}
