// Package artifacts turns a built OpenClaw installation into offline worker
// archives: a node bootstrap (the package plus its production dependency
// closure) and a worker bundle (the files of dist/worker/ that the
// installation's own compiled code names, see ReadInventory), described by a
// manifest of sizes and SHA-256 digests (docs/runtime-artifacts.md).
//
// # Manifest (schema openclaw.worker-runtime-artifacts.v1)
//
// This file is the contract shared with `clawkit crabbox` (pkg/crabbox),
// which consumes the manifest and both archives. The JSON shape is:
//
//	{"schema":"openclaw.worker-runtime-artifacts.v1",
//	 "buildId":"…", "package":{"name":"openclaw","version":"2026.9.6"},
//	 "plugins":["…"], "platform":"linux", "arch":"x64",
//	 "producer":{"name":"clawkit","version":"…"},
//	 "nodeBootstrap":{"path":"node-bootstrap/<sha256>.tgz","bytes":N,"sha256":"<hex>",
//	                  "packagePath":"node_modules/openclaw"},
//	 "workerBundle":{"path":"worker-artifacts/<sha256>.tgz","bytes":N,"sha256":"<hex>",
//	                 "bundleHash":"<hex>",
//	                 "entries":[{"path":"worker.mjs","mode":"0700","bytes":N,"sha256":"<hex>"}]}}
//
// OpenClaw's own code has no manifest file of this name (its gateway keeps
// the same facts in memory), so the baseline shape above is ours; the parts
// that OpenClaw does define are followed exactly:
//   - the bundle hash formula (see BundleHash) — OpenClaw prints the mode with
//     Number.toString(8), i.e. "700" with no leading zero, and the size in
//     decimal; the manifest's "mode" field is the 4-digit form "0700" for
//     readability, and BundleHash formats the numeric mode itself;
//   - the archive's relative path `worker-artifacts/<sha256 of the .tgz>.tgz`
//     where the hex must match ^[a-f0-9]{64}$;
//   - "platform" and "arch" use Node's process.platform / process.arch names
//     (linux, darwin, win32; x64, arm64, …), not Go's GOOS/GOARCH.
//
// Rules enforced by Validate (and so by LoadManifest):
//   - unknown fields anywhere are an error, as is trailing data, a manifest
//     larger than MaxManifestBytes, or a schema other than Schema;
//   - each archive's path is exactly "<dir>/<its sha256>.tgz" and bytes > 0;
//   - worker entries are plain file names at the archive root (no "/"),
//     strictly sorted by byte order (so no duplicates), mode "0" + 3 octal
//     digits, and bundleHash equals BundleHash(entries).
//
// A consumer re-hashing an archive builds []BundleEntry from the tar headers
// (path, mode&0o7777, size, sha256 of the content), sorts them with
// SortBundleEntries and compares BundleHash(...) with WorkerBundle.BundleHash.
package artifacts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/pluginmanifest"
)

const (
	// Schema is the manifest's schema identifier.
	Schema = "openclaw.worker-runtime-artifacts.v1"
	// ManifestName is the manifest's file name inside an export.
	ManifestName = "manifest.json"
	// BundleHashVersion is the first, NUL-terminated field of the bundle hash.
	BundleHashVersion = "openclaw-worker-bundle-v1"
	// WorkerDir and NodeBootstrapDir are the export's archive folders.
	WorkerDir        = "worker-artifacts"
	NodeBootstrapDir = "node-bootstrap"
	// PackagePath is where the node bootstrap places the package.
	PackagePath = "node_modules/openclaw"
	// WorkerMode is the mode of every worker bundle entry (OpenClaw's 448).
	WorkerMode = 0o700
	// MaxManifestBytes bounds how much of a manifest file is read.
	MaxManifestBytes = 1 << 20
	// ProducerName names clawkit in the manifest's producer field.
	ProducerName = "clawkit"
)

// Manifest is manifest.json of an export.
type Manifest struct {
	Schema        string        `json:"schema"`
	BuildID       string        `json:"buildId"`
	Package       PackageInfo   `json:"package"`
	Plugins       []string      `json:"plugins"`
	Platform      string        `json:"platform"`
	Arch          string        `json:"arch"`
	Producer      Producer      `json:"producer"`
	NodeBootstrap NodeBootstrap `json:"nodeBootstrap"`
	WorkerBundle  WorkerBundle  `json:"workerBundle"`
}

// PackageInfo identifies the exported installation.
type PackageInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Producer identifies the tool that wrote the export.
type Producer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Archive is what the manifest records for every archive.
type Archive struct {
	// Path is relative to the export folder: "<dir>/<sha256>.tgz".
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// NodeBootstrap is the node bootstrap archive.
type NodeBootstrap struct {
	Archive
	// PackagePath is the package's folder inside the archive.
	PackagePath string `json:"packagePath"`
}

// WorkerBundle is the worker bundle archive.
type WorkerBundle struct {
	Archive
	BundleHash string        `json:"bundleHash"`
	Entries    []WorkerEntry `json:"entries"`
	// Inventory says where the export read the list of entries from (the
	// installation's producer module and list); absent in older exports.
	Inventory *InventoryRef `json:"inventory,omitempty"`
}

// InventoryRef records where a worker bundle's inventory was read from.
type InventoryRef struct {
	Source string `json:"source"` // package-relative module, e.g. dist/bootstrap-….mjs
	Symbol string `json:"symbol"` // the list the producer iterates
}

// WorkerEntry is one file of the worker bundle as the manifest records it.
type WorkerEntry struct {
	Path   string `json:"path"`
	Mode   string `json:"mode"` // "0700"
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// BundleEntry is one file as the bundle hash sees it.
type BundleEntry struct {
	Path   string
	Mode   uint32 // permission bits, e.g. 0o700
	Size   int64
	SHA256 string // lower-case hex
}

var (
	hexRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-f0-9]{64}$`) })
	modeRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^0[0-7]{3}$`) })
	buildIDRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]*$`) }) // length checked in ValidBuildID
	nodeNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+$`) })
	jsIdentRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,127}$`) })
)

// ValidSHA256 reports whether s is 64 lower-case hex digits.
func ValidSHA256(s string) bool { return hexRe().MatchString(s) }

// ValidBuildID reports whether s is an acceptable build id: 1–128 of
// [A-Za-z0-9._:+-], starting with a letter or digit.
func ValidBuildID(s string) bool { return len(s) <= 128 && buildIDRe().MatchString(s) }

// WorkerPath returns the export-relative (and package-relative) path of a
// worker archive with the given tarball SHA-256.
func WorkerPath(sha string) (string, error) {
	if !ValidSHA256(sha) {
		return "", errs.Usage(CodeInvalidSha256, "%q is not a SHA-256 digest", sha).
			WithHint("give 64 lower-case hexadecimal digits")
	}
	return WorkerDir + "/" + sha + ".tgz", nil
}

// FormatMode renders permission bits the way the manifest stores them.
func FormatMode(m uint32) string { return fmt.Sprintf("%04o", m&0o7777) }

// ParseMode parses a manifest mode ("0700").
func ParseMode(s string) (uint32, error) {
	if !modeRe().MatchString(s) {
		return 0, fmt.Errorf("mode %q is not 0 followed by three octal digits", s)
	}
	v, err := strconv.ParseUint(s, 8, 32)
	return uint32(v), err
}

// SortBundleEntries sorts entries by path in byte order, as OpenClaw does.
func SortBundleEntries(e []BundleEntry) {
	sort.Slice(e, func(i, j int) bool { return e[i].Path < e[j].Path })
}

// BundleHash computes the openclaw-worker-bundle-v1 hash: SHA-256 over
// "openclaw-worker-bundle-v1\0" and, for each entry in the given order,
// "path\0" + mode in octal (no leading zero) + "\0" + decimal size + "\0" +
// sha256 hex + "\0". Callers pass entries sorted by SortBundleEntries.
func BundleHash(entries []BundleEntry) string {
	h := sha256.New()
	io.WriteString(h, BundleHashVersion+"\x00")
	var buf []byte
	for _, e := range entries {
		buf = buf[:0]
		buf = append(buf, e.Path...)
		buf = append(buf, 0)
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, e.Size, 10)
		buf = append(buf, 0)
		buf = append(buf, e.SHA256...)
		buf = append(buf, 0)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashEntries converts the manifest's worker entries for BundleHash. It
// assumes Validate succeeded (modes parse).
func (w *WorkerBundle) HashEntries() []BundleEntry {
	out := make([]BundleEntry, 0, len(w.Entries))
	for _, e := range w.Entries {
		m, _ := ParseMode(e.Mode)
		out = append(out, BundleEntry{Path: e.Path, Mode: m, Size: e.Bytes, SHA256: e.SHA256})
	}
	return out
}

// LoadManifest reads and strictly validates a manifest file. It returns the
// parsed manifest and the exact bytes read (for identity checks and
// receipts). Errors are *errs.Error: manifest_unreadable (missing or not a
// regular file), invalid_manifest (anything wrong with the content).
func LoadManifest(path string) (*Manifest, []byte, error) {
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return nil, nil, errs.Failed(errs.CodeManifestUnreadable, "cannot read manifest %s: %v", path, unwrapPathErr(err)).
			WithHint("pass the manifest.json of a completed 'clawkit runtime-artifacts export'").Wrap(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, errs.Failed(errs.CodeManifestUnreadable, "cannot stat manifest %s: %v", path, err).Wrap(err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, errs.Failed(errs.CodeManifestUnreadable, "manifest %s is not a regular file", path).
			WithHint("pass the manifest.json of a completed 'clawkit runtime-artifacts export'")
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, nil, errs.Failed(errs.CodeManifestUnreadable, "cannot read manifest %s: %v", path, err).Wrap(err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		e := errs.As(err)
		if e != nil {
			c := *e
			c.Message = fmt.Sprintf("%s: %s", path, e.Message)
			return nil, nil, &c
		}
		return nil, nil, err
	}
	return m, raw, nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseManifest decodes and validates manifest bytes (untrusted input).
func ParseManifest(raw []byte) (*Manifest, error) {
	bad := func(format string, args ...any) error {
		return errs.Failed(errs.CodeInvalidManifest, "invalid manifest: "+format, args...).
			WithHint("re-run 'clawkit runtime-artifacts export' to produce a fresh export")
	}
	if len(raw) > MaxManifestBytes {
		return nil, bad("larger than %d bytes", MaxManifestBytes)
	}
	if err := CheckStrictJSON(raw); err != nil {
		return nil, bad("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("trailing data after the JSON document")
	}
	if err := m.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	return &m, nil
}

// Validate checks every rule of the schema (see the package comment). The
// error is plain; ParseManifest classifies it.
func (m *Manifest) Validate() error {
	if m.Schema != Schema {
		return fmt.Errorf("schema is %q, want %q", m.Schema, Schema)
	}
	if !ValidBuildID(m.BuildID) {
		return fmt.Errorf("buildId %q is not 1-128 characters of [A-Za-z0-9._:+-]", m.BuildID)
	}
	if m.Package.Name == "" || m.Package.Version == "" {
		return errors.New("package.name and package.version are required")
	}
	if m.Plugins == nil {
		return errors.New("plugins is required (use [] for none)")
	}
	for i, p := range m.Plugins {
		if !pluginmanifest.ValidID(p) {
			return fmt.Errorf("plugins[%d] %q is not a plugin id", i, p)
		}
		if i > 0 && m.Plugins[i-1] >= p {
			return fmt.Errorf("plugins must be sorted and unique (%q after %q)", p, m.Plugins[i-1])
		}
	}
	if !nodeNameRe().MatchString(m.Platform) || !nodeNameRe().MatchString(m.Arch) {
		return fmt.Errorf("platform %q / arch %q must be Node names such as linux / x64", m.Platform, m.Arch)
	}
	if m.Producer.Name == "" {
		return errors.New("producer.name is required")
	}
	if err := checkArchive("nodeBootstrap", NodeBootstrapDir, m.NodeBootstrap.Archive); err != nil {
		return err
	}
	if m.NodeBootstrap.PackagePath != PackagePath {
		return fmt.Errorf("nodeBootstrap.packagePath is %q, want %q", m.NodeBootstrap.PackagePath, PackagePath)
	}
	w := &m.WorkerBundle
	if err := checkArchive("workerBundle", WorkerDir, w.Archive); err != nil {
		return err
	}
	if !ValidSHA256(w.BundleHash) {
		return fmt.Errorf("workerBundle.bundleHash %q is not 64 lower-case hex digits", w.BundleHash)
	}
	if len(w.Entries) == 0 {
		return errors.New("workerBundle.entries is empty")
	}
	for i, e := range w.Entries {
		if e.Path == "" || strings.ContainsAny(e.Path, "/\\\x00") || e.Path == "." || e.Path == ".." || len(e.Path) > 1024 {
			return fmt.Errorf("workerBundle.entries[%d].path %q is not a file name at the archive root", i, e.Path)
		}
		if i > 0 && w.Entries[i-1].Path >= e.Path {
			return fmt.Errorf("workerBundle.entries must be sorted by path without duplicates (%q after %q)", e.Path, w.Entries[i-1].Path)
		}
		if _, err := ParseMode(e.Mode); err != nil {
			return fmt.Errorf("workerBundle.entries[%d]: %v", i, err)
		}
		if e.Bytes < 0 {
			return fmt.Errorf("workerBundle.entries[%d].bytes is negative", i)
		}
		if !ValidSHA256(e.SHA256) {
			return fmt.Errorf("workerBundle.entries[%d].sha256 %q is not 64 lower-case hex digits", i, e.SHA256)
		}
	}
	if ref := w.Inventory; ref != nil {
		name, ok := strings.CutPrefix(ref.Source, "dist/")
		if !ok || !moduleNameRe().MatchString(name) || !jsIdentRe().MatchString(ref.Symbol) {
			return fmt.Errorf("workerBundle.inventory %q / %q is not a dist/ module and an identifier", ref.Source, ref.Symbol)
		}
	}
	if got := BundleHash(w.HashEntries()); got != w.BundleHash {
		return fmt.Errorf("workerBundle.bundleHash %s does not match its entries (%s)", w.BundleHash, got)
	}
	return nil
}

func checkArchive(field, dir string, a Archive) error {
	if !ValidSHA256(a.SHA256) {
		return fmt.Errorf("%s.sha256 %q is not 64 lower-case hex digits", field, a.SHA256)
	}
	if want := dir + "/" + a.SHA256 + ".tgz"; a.Path != want {
		return fmt.Errorf("%s.path is %q, want %q", field, a.Path, want)
	}
	if a.Bytes <= 0 {
		return fmt.Errorf("%s.bytes must be positive", field)
	}
	return nil
}

// Marshal renders the manifest as written to disk: indented JSON plus a
// newline, HTML characters not escaped. Deterministic for equal manifests.
func (m *Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
