// Command release builds clawkit's release files into one folder
// (`make release`; docs/release.md): for linux and darwin × amd64 and
// arm64 a static binary packed as clawkit_<version>_<os>_<arch>.tar.gz
// with README.md, LICENSE, the man page and the shell completions; a
// CycloneDX SBOM per binary (clawkit_<version>_<os>_<arch>.cdx.json, the
// license in its metadata); a .deb and an .rpm per linux target
// (packages.go); an in-toto SLSA provenance statement over the archives
// and packages (clawkit_<version>.intoto.json, provenance.go); and
// SHA256SUMS over all of them. With a signing key (-signing-key FILE or
// $CLAWKIT_SIGNING_KEY), SHA256SUMS and the statement are signed
// (sign.go). `release image` builds the OCI image layout from the linux
// archives (image.go). Nothing is published.
//
// It is a module of its own (scripts/release/go.mod) so that the
// packaging libraries it pins are not dependencies of clawkit itself.
//
// The output is byte-reproducible from a commit: the binaries are built
// with -trimpath, no VCS stamp, an empty build id and the version facts of
// scripts/version.sh; every archive entry has owner 0/0, no user or group
// names, mode 0755 or 0644 and SOURCE_DATE_EPOCH (the commit's time) as
// its mtime, in sorted order; gzip headers carry no name and no time.
// scripts/release-check.sh proves it by building twice in two clones.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// targets are the released platforms (docs/release.md, "Platforms").
var targets = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}

// cyclonedxVersion is the pinned SBOM generator (the Makefile installs it).
const cyclonedxVersion = "v1.10.0"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "image" {
		fl := flag.NewFlagSet("release image", flag.ExitOnError)
		repo := fl.String("repo", ".", "the repository (its commit names the image)")
		from := fl.String("from", "dist/release", "the release folder (make release)")
		out := fl.String("out", "dist/image", "the OCI image layout to write (emptied first)")
		_ = fl.Parse(os.Args[2:]) // ExitOnError: never returns an error
		if err := runImage(*repo, *from, *out); err != nil {
			fmt.Fprintf(os.Stderr, "release image: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.repo, "repo", ".", "the repository to build")
	flag.StringVar(&o.out, "out", "dist/release", "output folder (emptied first)")
	flag.StringVar(&o.sbomTool, "cyclonedx", "", "path of cyclonedx-gomod "+cyclonedxVersion+" (required)")
	only := flag.String("targets", strings.Join(targets, ","), "comma-separated os/arch list")
	flag.StringVar(&o.signingKey, "signing-key", "", "ECDSA P-256 private key (PEM) to sign SHA256SUMS and the provenance with; default $"+signingKeyEnv+" (the PEM itself); unsigned when neither is set")
	flag.StringVar(&o.builderID, "builder-id", defaultBuilderID, "the provenance's builder id")
	flag.Parse()
	o.targets = strings.Split(*only, ",")
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	repo, out, sbomTool, signingKey, builderID string
	targets                                    []string
}

// runImage builds the OCI image layout from a release folder.
func runImage(repo, from, out string) error {
	f, err := readFacts(repo)
	if err != nil {
		return err
	}
	d, err := buildImage(from, out, f.version, f.commit, time.Unix(f.epoch, 0).UTC())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "release image: %s (linux/amd64, linux/arm64) in %s\n", f.version, out)
	_, err = fmt.Println(d)
	return err
}

// facts are scripts/version.sh's lines.
type facts struct {
	version, commit, date, dirty string
	epoch                        int64
}

func readFacts(repo string) (facts, error) {
	b, err := exec.Command("sh", filepath.Join(repo, "scripts", "version.sh")).Output()
	if err != nil {
		return facts{}, fmt.Errorf("scripts/version.sh: %w", err)
	}
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(l) != 5 {
		return facts{}, fmt.Errorf("scripts/version.sh printed %q", b)
	}
	f := facts{version: l[0], commit: l[1], date: l[2], dirty: l[3]}
	if f.epoch, err = strconv.ParseInt(l[4], 10, 64); err != nil {
		return facts{}, fmt.Errorf("commit time %q: %w", l[4], err)
	}
	// SOURCE_DATE_EPOCH, when the caller sets it, wins (the convention of
	// reproducible builds); otherwise the commit's time.
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if f.epoch, err = strconv.ParseInt(s, 10, 64); err != nil {
			return facts{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
	}
	return f, nil
}

func run(o options) error {
	out, sbomTool, want := o.out, o.sbomTool, o.targets
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(repo, "cmd", "clawkit")); err != nil {
		return errors.New("-repo is not the clawkit repository (make release)")
	}
	if _, err := os.Stat(filepath.Join(repo, "LICENSE")); err != nil {
		return fmt.Errorf("every archive and package ships the license: %w", err)
	}
	key, err := loadSigningKey(repo, o.signingKey)
	if err != nil {
		return err
	}
	if sbomTool == "" {
		return errors.New("-cyclonedx PATH is required (make release installs cyclonedx-gomod " + cyclonedxVersion + ")")
	}
	for _, t := range want {
		if !contains(targets, t) {
			return fmt.Errorf("unknown target %q (known: %s)", t, strings.Join(targets, ", "))
		}
	}
	f, err := readFacts(repo)
	if err != nil {
		return err
	}
	goVersion, err := goEnvVersion(repo)
	if err != nil {
		return err
	}
	if f.dirty == "true" {
		fmt.Fprintf(os.Stderr, "release: warning: the tree has uncommitted changes; %s cannot be rebuilt from a commit\n", f.version)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	work := filepath.Join(out, ".work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	mtime := time.Unix(f.epoch, 0).UTC()

	// 1. Binaries.
	bins := map[string]string{}
	for _, t := range want {
		p := filepath.Join(work, strings.ReplaceAll(t, "/", "_"), "clawkit")
		fmt.Fprintf(os.Stderr, "release: build %s\n", t)
		if err := build(repo, t, f, p); err != nil {
			return err
		}
		bins[t] = p
	}

	// 2. The files every archive shares, generated by a binary this
	// machine can run (the same model in every target's binary).
	host := runtime.GOOS + "/" + runtime.GOARCH
	hostBin, ok := bins[host]
	if !ok {
		hostBin = filepath.Join(work, "host", "clawkit")
		if err := build(repo, host, f, hostBin); err != nil {
			return err
		}
	}
	if err := checkVersion(hostBin, f); err != nil {
		return err
	}
	shared, err := sharedFiles(repo, hostBin, work)
	if err != nil {
		return err
	}

	// 3. Archives and SBOMs.
	var published []string
	for _, t := range want {
		base := fmt.Sprintf("clawkit_%s_%s", f.version, strings.ReplaceAll(t, "/", "_"))
		files := append([]file{{name: "clawkit", path: bins[t], mode: 0o755}}, shared...)
		if err := writeArchive(filepath.Join(out, base+".tar.gz"), files, mtime); err != nil {
			return err
		}
		sbom := filepath.Join(out, base+".cdx.json")
		cmd := exec.Command(sbomTool, "bin", "-json", "-noserial", "-notimestamp", "-version", f.version, "-output", sbom, bins[t])
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("SBOM for %s: %w", t, err)
		}
		if err := addSBOMLicense(sbom); err != nil {
			return fmt.Errorf("SBOM for %s: %w", t, err)
		}
		published = append(published, base+".tar.gz", base+".cdx.json")
	}

	// 4. Packages for the linux targets.
	var packages []string
	for _, t := range want {
		goos, goarch, _ := strings.Cut(t, "/")
		if goos != "linux" {
			continue
		}
		contents, err := pkgFiles(repo, filepath.Join(work, "pkg-"+goarch), shared, bins[t], mtime)
		if err != nil {
			return err
		}
		for _, format := range []string{"deb", "rpm"} {
			name := packageName(f.version, goarch, format)
			fmt.Fprintf(os.Stderr, "release: package %s\n", name)
			if err := writePackage(format, filepath.Join(out, name), f.version, goarch, contents, mtime); err != nil {
				return err
			}
			packages = append(packages, name)
		}
	}
	published = append(published, packages...)

	// 5. Provenance over the archives and packages.
	subjects := map[string]string{}
	for _, name := range published {
		if strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".deb") || strings.HasSuffix(name, ".rpm") {
			if subjects[name], err = sha256File(filepath.Join(out, name)); err != nil {
				return err
			}
		}
	}
	stmt, err := buildProvenance(provenanceInput{
		facts: f, goVersion: goVersion, builderID: o.builderID, targets: want, subjects: subjects,
		tools: map[string]string{"cyclonedx-gomod": cyclonedxVersion, "nfpm": nfpmVersion},
	})
	if err != nil {
		return err
	}
	provName := fmt.Sprintf("clawkit_%s.intoto.json", f.version)
	if err := os.WriteFile(filepath.Join(out, provName), stmt, 0o644); err != nil {
		return err
	}
	published = append(published, provName)

	// 6. SHA256SUMS (sha256sum's format, sorted by name).
	sort.Strings(published)
	var sums bytes.Buffer
	for _, name := range published {
		h, err := sha256File(filepath.Join(out, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", h, name)
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), sums.Bytes(), 0o644); err != nil {
		return err
	}

	// 7. Signatures.
	if key != nil {
		for _, name := range []string{"SHA256SUMS", provName} {
			if err := signFile(key, filepath.Join(out, name)); err != nil {
				return err
			}
		}
		pub, err := publicKeyPEM(key)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "release: signed SHA256SUMS and %s; verify with this public key:\n%s", provName, pub)
	} else {
		fmt.Fprintf(os.Stderr, "release: note: no signing key (-signing-key FILE or $%s); SHA256SUMS is not signed\n", signingKeyEnv)
	}
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "release: %s in %s (%d files + SHA256SUMS)\n", f.version, out, len(published))
	if _, err := os.Stdout.Write(sums.Bytes()); err != nil {
		return err
	}
	return nil
}

// build compiles cmd/clawkit for target into dst: static, path-free and
// with an empty build id, so the bytes depend only on the source, the Go
// release and the version facts. The environment is pinned so a caller's
// GOFLAGS, GOAMD64 or GOEXPERIMENT cannot change the output.
func build(repo, target string, f facts, dst string) error {
	goos, goarch, _ := strings.Cut(target, "/")
	ldflags := fmt.Sprintf("-s -w -buildid= -X %[1]s.version=%[2]s -X %[1]s.commit=%[3]s -X %[1]s.date=%[4]s -X %[1]s.dirty=%[5]s",
		"github.com/clawkit/clawkit/pkg/buildinfo", f.version, f.commit, f.date, f.dirty)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-mod=readonly", "-ldflags", ldflags, "-o", dst, "./cmd/clawkit")
	cmd.Dir = repo
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOTOOLCHAIN", "GODEBUG":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=", "GOTOOLCHAIN=local")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", target, err)
	}
	return nil
}

// checkVersion runs the host binary's `--json version` and compares it
// with the facts it was built with.
func checkVersion(bin string, f facts) error {
	b, err := exec.Command(bin, "--json", "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	var v struct {
		Version, Commit, Date string
		Dirty                 bool
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	if v.Version != f.version || v.Commit != f.commit || v.Date != f.date || strconv.FormatBool(v.Dirty) != f.dirty {
		return fmt.Errorf("the built binary reports %+v, built from %+v", v, f)
	}
	return nil
}

// file is one archive entry: its name in the archive and where its bytes are.
type file struct {
	name string
	path string
	mode int64
}

// sharedFiles are README.md, LICENSE, the man page and the
// completions, the last two generated by the binary itself.
func sharedFiles(repo, bin, work string) ([]file, error) {
	files := []file{
		{name: "README.md", path: filepath.Join(repo, "README.md"), mode: 0o644},
		{name: "LICENSE", path: filepath.Join(repo, "LICENSE"), mode: 0o644},
	}
	gen := filepath.Join(work, "shared")
	if err := exec.Command(bin, "gen-docs", "--man", filepath.Join(gen, "man")).Run(); err != nil {
		return nil, fmt.Errorf("gen-docs: %w", err)
	}
	files = append(files, file{name: "man/clawkit.1", path: filepath.Join(gen, "man", "clawkit.1"), mode: 0o644})
	if err := os.MkdirAll(filepath.Join(gen, "completions"), 0o755); err != nil {
		return nil, err
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		b, err := exec.Command(bin, "completion", sh).Output()
		if err != nil {
			return nil, fmt.Errorf("completion %s: %w", sh, err)
		}
		p := filepath.Join(gen, "completions", "clawkit."+sh)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		files = append(files, file{name: "completions/clawkit." + sh, path: p, mode: 0o644})
	}
	return files, nil
}

// writeArchive writes a normalised tar.gz: entries sorted by name, folders
// listed before their files, owner 0/0 without names, fixed modes, one
// mtime, USTAR headers (no atime, ctime or PAX records); gzip without a
// file name or time.
func writeArchive(dst string, files []file, mtime time.Time) error {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, f := range files {
		if d := filepath.ToSlash(filepath.Dir(f.name)); d != "." && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatUSTAR}); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// sha256File is the file's SHA-256 in lower-case hex.
func sha256File(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// goEnvVersion is the Go release that builds the binaries (the go command
// on PATH, GOTOOLCHAIN=local as in build).
func goEnvVersion(repo string) (string, error) {
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// addSBOMLicense records clawkit's own license (MIT) on the SBOM's main
// component and its metadata component: cyclonedx-gomod cannot see it in
// a binary. The document is re-rendered (keys sorted, two-space indent), the same
// bytes for the same input.
func addSBOMLicense(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(doc["metadata"], &meta); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var comp map[string]json.RawMessage
	if err := json.Unmarshal(meta["component"], &comp); err != nil {
		return fmt.Errorf("metadata.component: %w", err)
	}
	comp["licenses"] = json.RawMessage(`[{"license":{"id":"MIT"}}]`)
	if meta["component"], err = json.Marshal(comp); err != nil {
		return err
	}
	meta["licenses"] = json.RawMessage(`[{"license":{"id":"MIT"}}]`)
	if doc["metadata"], err = json.Marshal(meta); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
