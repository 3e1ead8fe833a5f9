package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPackagesAreReproducible: the same payload gives byte-identical .deb
// and .rpm files whatever the work folder; CLAWKIT_KEEP_PACKAGES=DIR keeps
// them (to run lintian or rpm -qlp on them by hand).
func TestPackagesAreReproducible(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1700000000, 0).UTC()
	build := func(work string) map[string][]byte {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(work, ".work"), 0o755); err != nil {
			t.Fatal(err)
		}
		var shared []file
		for name, body := range map[string]string{"man/clawkit.1": ".TH CLAWKIT 1\n", "completions/clawkit.bash": "complete\n", "completions/clawkit.zsh": "#compdef clawkit\n", "completions/clawkit.fish": "complete -c clawkit\n"} {
			p := filepath.Join(work, "src", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			shared = append(shared, file{name: name, path: p, mode: 0o644})
		}
		bin := filepath.Join(work, "src", "clawkit")
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho clawkit v1.2.3\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		contents, err := pkgFiles(repo, filepath.Join(work, ".work", "pkg"), shared, bin, mtime)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, format := range []string{"deb", "rpm"} {
			dst := filepath.Join(work, packageName("v1.2.3", "amd64", format))
			if err := writePackage(format, dst, "v1.2.3", "amd64", contents, mtime); err != nil {
				t.Fatal(err)
			}
			if out[format], err = os.ReadFile(dst); err != nil {
				t.Fatal(err)
			}
			if keep := os.Getenv("CLAWKIT_KEEP_PACKAGES"); keep != "" {
				if err := os.WriteFile(filepath.Join(keep, filepath.Base(dst)), out[format], 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return out
	}
	a := build(t.TempDir())
	b := build(filepath.Join(t.TempDir(), "other", "path"))
	for _, f := range []string{"deb", "rpm"} {
		if len(a[f]) == 0 || !bytes.Equal(a[f], b[f]) {
			t.Errorf("%s: two builds differ (%d and %d bytes)", f, len(a[f]), len(b[f]))
		}
	}
}
