package crabboxtest

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
)

// LayoutKinds are node bootstraps that pass every archive rule but break
// the install's own layout: what install must refuse (before anything is
// placed, leaving the target as it was), each with a fragment of the
// error. "non-utf8" is not a refusal: it installs, and verify --deep must
// agree with the install about its name.
var LayoutKinds = map[string]string{
	"worker-dir-link":     "node_modules/openclaw/worker-artifacts is a symlink",
	"worker-dir-dangling": "node_modules/openclaw/worker-artifacts is a symlink",
	"worker-dir-file":     "node_modules/openclaw/worker-artifacts is a file",
	"package-dir-link":    "node_modules/openclaw is a symlink",
	"modules-dir-link":    "node_modules is a symlink",
	"package-json-link":   "node_modules/openclaw/package.json is a symlink, not a regular file",
	"package-json-hard":   "node_modules/openclaw/package.json is a hardlink, not a regular file",
	"reserved-record":     "contains .clawkit-runtime.json, a name reserved for the install record",
	"reserved-index":      "contains .clawkit-runtime-index.json, a name reserved for the install record",
	"no-identity":         "has no readable node_modules/openclaw/package.json",
	"wrong-identity":      "node bootstrap holds openclaw@0.0.1, the manifest records openclaw@" + Version,
	"worker-path-entry":   "already contains node_modules/openclaw/worker-artifacts/",
	"non-utf8":            "",
	"control-name":        "",
}

// ControlName is the entry name of the "control-name" kind: a terminal
// escape sequence and a newline that would forge a "clawkit: error:" line
// if printed raw (issue 31, item 4). It installs (names are bytes); human
// output must show it escaped.
const ControlName = "node_modules/openclaw/dist/\x1b[2J\x1b[31mred\nclawkit: error: forged.js"

// SortedLayoutKinds lists LayoutKinds' names in order.
func SortedLayoutKinds() []string {
	var k []string
	for n := range LayoutKinds {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// WorkerRel is where install places WorkerBundle() inside the runtime.
func WorkerRel() string {
	w, _ := WorkerBundle()
	s := sha256.Sum256(w)
	return "node_modules/openclaw/worker-artifacts/" + hex.EncodeToString(s[:]) + ".tgz"
}

// LayoutArchive builds the node bootstrap of a LayoutKinds kind; it panics
// on an unknown kind.
func LayoutArchive(kind string) []byte {
	pj := archivetest.Entry{Name: "node_modules/openclaw/package.json", Body: []byte(fmt.Sprintf(`{"name":"openclaw","version":%q}`, Version))}
	idx := archivetest.Entry{Name: "node_modules/openclaw/dist/index.js", Body: archivetest.Text(20, 8000)}
	link := func(name, target string) archivetest.Entry {
		return archivetest.Entry{Name: name, Type: tar.TypeSymlink, Linkname: target}
	}
	var e []archivetest.Entry
	switch kind {
	case "worker-dir-link":
		// The worker archive would be written two folders up, at the
		// runtime's root (or anywhere the link points).
		e = []archivetest.Entry{pj, idx, link("node_modules/openclaw/worker-artifacts", "../..")}
	case "worker-dir-dangling":
		e = []archivetest.Entry{pj, idx, link("node_modules/openclaw/worker-artifacts", "../missing")}
	case "worker-dir-file":
		e = []archivetest.Entry{pj, idx, {Name: "node_modules/openclaw/worker-artifacts", Body: []byte("x")}}
	case "package-dir-link":
		// The package itself elsewhere: package.json, read through the
		// link, is right.
		e = []archivetest.Entry{{Name: "real/package.json", Body: pj.Body}, link("node_modules/openclaw", "../real")}
	case "modules-dir-link":
		e = []archivetest.Entry{{Name: "real/openclaw/package.json", Body: pj.Body}, link("node_modules", "real")}
	case "package-json-link":
		e = []archivetest.Entry{{Name: "node_modules/openclaw/real.json", Body: pj.Body}, link("node_modules/openclaw/package.json", "real.json")}
	case "package-json-hard":
		e = []archivetest.Entry{{Name: "node_modules/openclaw/real.json", Body: pj.Body}, {Name: "node_modules/openclaw/package.json", Type: tar.TypeLink, Linkname: "node_modules/openclaw/real.json"}}
	case "reserved-record":
		e = []archivetest.Entry{pj, {Name: ".clawkit-runtime.json", Body: []byte("{}")}}
	case "reserved-index":
		e = []archivetest.Entry{pj, {Name: ".clawkit-runtime-index.json", Body: []byte("{}")}}
	case "no-identity":
		e = []archivetest.Entry{idx}
	case "wrong-identity":
		e = []archivetest.Entry{{Name: pj.Name, Body: []byte(`{"name":"openclaw","version":"0.0.1"}`)}, idx}
	case "worker-path-entry":
		w, _ := WorkerBundle()
		bad := append([]byte(nil), w...)
		bad[len(bad)/2] ^= 0xff // same size, other bytes
		e = []archivetest.Entry{pj, {Name: WorkerRel(), Body: bad}}
	case "non-utf8":
		e = []archivetest.Entry{pj, idx, {Name: "node_modules/openclaw/dist/caf\xe9.js", Body: []byte("latin-1 name\n")},
			link("node_modules/openclaw/dist/l\xff", "caf\xe9.js")}
	case "control-name":
		e = []archivetest.Entry{pj, idx, {Name: ControlName, Body: []byte("a name from the archive\n")}}
	default:
		panic("unknown layout kind " + kind)
	}
	return archivetest.Build(e)
}

// ModesArchive is a node bootstrap whose folders and files ask for modes
// an install must not give (issue 31, item 5): world-writable, sticky,
// setgid and setuid folders, a world-writable and a setuid file. Every
// one of them must be installed at most 0755 with no set-id or sticky bit.
func ModesArchive() []byte {
	return archivetest.Build([]archivetest.Entry{
		{Name: "node_modules/", Type: tar.TypeDir, Mode: 0o777},
		{Name: "node_modules/openclaw/", Type: tar.TypeDir, Mode: 0o2775},
		{Name: "node_modules/openclaw/package.json", Mode: 0o666, Body: []byte(fmt.Sprintf(`{"name":"openclaw","version":%q}`, Version))},
		{Name: "node_modules/openclaw/dist/", Type: tar.TypeDir, Mode: 0o1777},
		{Name: "node_modules/openclaw/dist/index.js", Mode: 0o4777, Body: archivetest.Text(20, 8000)},
		{Name: "node_modules/openclaw/dist/tmp/", Type: tar.TypeDir, Mode: 0o6777},
		{Name: "node_modules/openclaw/dist/tmp/x.js", Mode: 0o777, Body: []byte("x")},
	})
}
