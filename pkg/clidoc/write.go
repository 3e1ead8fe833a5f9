package clidoc

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// ManName is the man page's file name.
const ManName = "clawkit.1"

// pages is every generated file by path: the man page under manDir (when
// not empty) and the Markdown reference under mdDir (when not empty).
func pages(root *kong.Node, manDir, mdDir string) map[string][]byte {
	out := map[string][]byte{}
	if manDir != "" {
		out[filepath.Join(manDir, ManName)] = Man(root)
	}
	if mdDir != "" {
		for name, b := range Markdown(root) {
			out[filepath.Join(mdDir, name)] = b
		}
	}
	return out
}

// Write publishes the pages (each atomically) and removes generated
// Markdown pages of groups that no longer exist. It returns the paths
// written, sorted.
func Write(root *kong.Node, manDir, mdDir string) ([]string, error) {
	ps := pages(root, manDir, mdDir)
	var written []string
	for _, dir := range []string{manDir, mdDir} {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
	}
	for p, b := range ps {
		if err := fsx.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		written = append(written, p)
	}
	for _, p := range orphans(ps, mdDir) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	sort.Strings(written)
	return written, nil
}

// Stale lists the pages whose committed bytes differ from a fresh
// rendering, are missing, or are left from a group that no longer exists.
func Stale(root *kong.Node, manDir, mdDir string) []string {
	ps := pages(root, manDir, mdDir)
	var stale []string
	for p, want := range ps {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, p)
		}
	}
	stale = append(stale, orphans(ps, mdDir)...)
	sort.Strings(stale)
	return stale
}

// orphans are generated-looking Markdown pages (clawkit*.md) in mdDir that
// the model no longer produces.
func orphans(ps map[string][]byte, mdDir string) []string {
	if mdDir == "" {
		return nil
	}
	ents, _ := os.ReadDir(mdDir)
	var out []string
	for _, e := range ents {
		p := filepath.Join(mdDir, e.Name())
		if strings.HasPrefix(e.Name(), "clawkit") && strings.HasSuffix(e.Name(), ".md") && ps[p] == nil {
			out = append(out, p)
		}
	}
	return out
}
