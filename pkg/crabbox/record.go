package crabbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Record is .clawkit-runtime.json: what was installed, by which CLI, and the
// digest of the index. Verify compares it with the manifest.
type Record struct {
	Schema         string        `json:"schema"`
	PackageName    string        `json:"packageName"`
	PackageVersion string        `json:"packageVersion"`
	BuildID        string        `json:"buildId"`
	Platform       string        `json:"platform"`
	Arch           string        `json:"arch"`
	ManifestSHA256 string        `json:"manifestSha256"`
	PackagePath    string        `json:"packagePath"`
	NodeBootstrap  RecordArchive `json:"nodeBootstrap"`
	WorkerBundle   RecordWorker  `json:"workerBundle"`
	CLIVersion     string        `json:"cliVersion"`
	InstalledAt    string        `json:"installedAt"`
	Index          RecordIndex   `json:"index"`
	// Tree is the stamp (treeStamp) of the runtime folder as installed;
	// empty in records of older installs.
	Tree string `json:"tree,omitempty"`
}

// RecordArchive is an archive's identity.
type RecordArchive struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// RecordWorker is the worker archive's identity and where it was placed.
type RecordWorker struct {
	RecordArchive
	BundleHash string `json:"bundleHash"`
	// Path is relative to the runtime folder.
	Path string `json:"path"`
}

// RecordIndex names the index file and its digest.
type RecordIndex struct {
	SHA256  string `json:"sha256"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"` // content bytes of regular files
}

// Index is .clawkit-runtime-index.json: every entry the node bootstrap put on
// disk (plus the worker archive), for `verify --deep`.
type Index struct {
	Schema  string       `json:"schema"`
	Entries []IndexEntry `json:"entries"`
}

// IndexEntry is one installed path, relative to the runtime folder.
//
// Names are bytes on disk and need not be UTF-8, which JSON strings cannot
// carry (they would be stored as U+FFFD and no longer name the file). Such
// a name is also stored exactly, hex-encoded, in PathHex (LinkHex for a
// link target); Path then holds a readable form only. See docs/crabbox.md.
type IndexEntry struct {
	Path    string `json:"path"`
	PathHex string `json:"pathHex,omitempty"`
	Type    string `json:"type"` // file, dir, symlink, hardlink
	// Mode is the permission bits as installed, in octal ("0644"); none
	// for a symlink.
	Mode    string `json:"mode,omitempty"`
	Size    int64  `json:"size,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Link    string `json:"link,omitempty"`
	LinkHex string `json:"linkHex,omitempty"`
}

func indexEntry(name, typ string) IndexEntry {
	ie := IndexEntry{Path: name, Type: typ}
	if !utf8.ValidString(name) {
		ie.Path, ie.PathHex = strings.ToValidUTF8(name, "\uFFFD"), hex.EncodeToString([]byte(name))
	}
	return ie
}

func (ie *IndexEntry) setLink(target string) {
	ie.Link = target
	if !utf8.ValidString(target) {
		ie.Link, ie.LinkHex = strings.ToValidUTF8(target, "\uFFFD"), hex.EncodeToString([]byte(target))
	}
}

// name and link are the exact bytes of the entry's path and link target.
func (ie *IndexEntry) name() (string, error) { return exact(ie.Path, ie.PathHex) }
func (ie *IndexEntry) link() (string, error) { return exact(ie.Link, ie.LinkHex) }

func exact(s, h string) (string, error) {
	if h == "" {
		return s, nil
	}
	b, err := hex.DecodeString(h)
	if err != nil || utf8.Valid(b) {
		return "", fmt.Errorf("invalid hex name %q", h)
	}
	return string(b), nil
}

const maxRecordBytes = 64 << 10

// maxIndexBytes bounds the index read by verify --deep: 250,000 entries of
// up to ~1.2 KiB each.
const maxIndexBytes = 320 << 20

func (r *Record) matches(m *artifacts.Manifest, manifestSHA string) []string {
	var bad []string
	cmp := func(what, got, want string) {
		if got != want {
			bad = append(bad, fmt.Sprintf("%s is %q, manifest says %q", what, got, want))
		}
	}
	cmp("package", r.PackageName+"@"+r.PackageVersion, m.Package.Name+"@"+m.Package.Version)
	cmp("build id", r.BuildID, m.BuildID)
	cmp("platform", r.Platform+"/"+r.Arch, m.Platform+"/"+m.Arch)
	cmp("manifest sha256", r.ManifestSHA256, manifestSHA)
	cmp("package path", r.PackagePath, m.NodeBootstrap.PackagePath)
	cmp("node bootstrap sha256", r.NodeBootstrap.SHA256, m.NodeBootstrap.SHA256)
	if r.NodeBootstrap.Bytes != m.NodeBootstrap.Bytes {
		bad = append(bad, fmt.Sprintf("node bootstrap bytes is %d, manifest says %d", r.NodeBootstrap.Bytes, m.NodeBootstrap.Bytes))
	}
	cmp("worker bundle sha256", r.WorkerBundle.SHA256, m.WorkerBundle.SHA256)
	cmp("bundle hash", r.WorkerBundle.BundleHash, m.WorkerBundle.BundleHash)
	return bad
}

// readRecord reads and strictly decodes the install record.
func readRecord(runtimeDir string) (*Record, error) {
	b, err := fsx.ReadRegular(filepath.Join(runtimeDir, RecordName), maxRecordBytes)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := strictJSON(b, &r); err != nil {
		return nil, fmt.Errorf("install record is not valid: %v", err)
	}
	if r.Schema != RecordSchema {
		return nil, fmt.Errorf("install record schema is %q, want %q", r.Schema, RecordSchema)
	}
	return &r, nil
}

func strictJSON(b []byte, v any) error {
	if err := artifacts.CheckStrictJSON(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON document")
	}
	return nil
}

func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeNew writes a file that must not exist yet, synced.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	return fsx.WriteSyncClose(f, data)
}
