package testscript

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// Helpers for the release scripts (release_*.txtar): a release folder
// shaped like `make release`'s, served over HTTP on 127.0.0.1, for
// scripts/install.sh.
func releaseKit() scriptKit {
	return scriptKit{
		cmds: map[string]scriptCmd{
			"http-serve":   cmdHTTPServe,
			"fake-release": cmdFakeRelease,
			"tamper":       cmdTamper,
		},
	}
}

// http-serve DIR VAR: serves DIR read-only on 127.0.0.1 (a free port) until
// the script ends and sets $VAR to its base URL. A missing file is a 404.
func cmdHTTPServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: http-serve DIR VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("http-serve: %v", err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(ts.MkAbs(args[0])))}
	go srv.Serve(l)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[1], "http://"+l.Addr().String())
}

// fake-release [-reports V] DIR VERSION OS/ARCH...: writes
// clawkit_VERSION_OS_ARCH.tar.gz for each platform into DIR, each holding a
// `clawkit` that is a small sh script answering `--json version` with
// VERSION (or V), README.md and man/clawkit.1, and SHA256SUMS over them,
// as make release lays them out.
func cmdFakeRelease(ts *testscript.TestScript, neg bool, args []string) {
	reports := ""
	if len(args) > 2 && args[0] == "-reports" {
		reports, args = args[1], args[2:]
	}
	if neg || len(args) < 3 {
		ts.Fatalf("usage: fake-release [-reports V] DIR VERSION OS/ARCH...")
	}
	dir, version := ts.MkAbs(args[0]), args[1]
	if reports == "" {
		reports = version
	}
	ts.Check(os.MkdirAll(dir, 0o755))
	bin := fmt.Sprintf("#!/bin/sh\n# fake clawkit\ncase \"$*\" in\n*--json*) printf '{\\n  \"version\": \"%s\"\\n}\\n' ;;\n*) echo 'clawkit %s' ;;\nesac\n", reports, reports)
	var names []string
	for _, p := range args[2:] {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			ts.Fatalf("fake-release: %q is not OS/ARCH", p)
		}
		name := fmt.Sprintf("clawkit_%s_%s_%s.tar.gz", version, goos, goarch)
		ts.Check(os.WriteFile(filepath.Join(dir, name), tarGz(ts, map[string]string{
			"clawkit": bin, "README.md": "# clawkit\n", "man/clawkit.1": ".TH CLAWKIT 1\n",
		}), 0o644))
		names = append(names, name)
	}
	sort.Strings(names)
	var sums bytes.Buffer
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		ts.Check(err)
		h := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), n)
	}
	ts.Check(os.WriteFile(filepath.Join(dir, "SHA256SUMS"), sums.Bytes(), 0o644))
}

func tarGz(ts *testscript.TestScript, files map[string]string) []byte {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		mode := int64(0o644)
		if n == "clawkit" {
			mode = 0o755
		}
		ts.Check(tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[n]))
		ts.Check(err)
	}
	ts.Check(tw.Close())
	ts.Check(zw.Close())
	return buf.Bytes()
}

// tamper FILE: flips one bit of FILE's last byte (same size, other bytes).
func cmdTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tamper FILE")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	if len(b) == 0 {
		ts.Fatalf("tamper: %s is empty", args[0])
	}
	b[len(b)-1] ^= 1
	ts.Check(os.WriteFile(p, b, 0o644))
}
