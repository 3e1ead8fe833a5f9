package main

// Linux packages (docs/release.md, "Packages"): a .deb and an .rpm per
// linux target, built with nfpm (a pinned library; no packaging tools are
// needed on the build machine). They install the binary in /usr/bin, the
// man page, the completions, the systemd units (installed, never enabled
// or started), a sysusers.d entry for the `clawkit` system user the
// gateway template runs as, and the license. Every file's time is
// SOURCE_DATE_EPOCH, so the packages are byte-reproducible.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// nfpmVersion is the pinned nfpm (scripts/release/go.mod).
const nfpmVersion = "v2.48.0"

const (
	pkgMaintainer = "The clawkit authors <clawkit@users.noreply.github.com>"
	pkgHomepage   = "https://github.com/clawkit/clawkit"
	pkgSummary    = "OpenClaw plugin runtime contracts for the shell and CI"
	pkgLongDesc   = "clawkit is one binary of single-purpose commands implementing the\n" +
		"OpenClaw plugin runtime contracts: Deep Research, runtime archives,\n" +
		"skills, an MCP client and proxy, and a gateway that runs as a\n" +
		"systemd service (clawkit-gateway@.service, not enabled on install)."
)

// sysusers declares the gateway's system user; systemd-sysusers (or the
// post-install script's useradd fallback) creates it.
const sysusers = "# The system user of clawkit-gateway@.service (docs/operations.md).\n" +
	"u clawkit - \"clawkit gateway\" /var/lib/clawkit /usr/sbin/nologin\n"

// postInstall creates the user on install, never enables a unit, and lets
// a running systemd see the new units.
const postInstall = `#!/bin/sh
set -e
case "${1:-}" in
configure | 1 | 2 | "")
	if command -v systemd-sysusers >/dev/null 2>&1; then
		systemd-sysusers clawkit.conf
	elif ! getent passwd clawkit >/dev/null 2>&1; then
		useradd --system --user-group --home-dir /var/lib/clawkit --no-create-home --shell /usr/sbin/nologin --comment "clawkit gateway" clawkit
	fi
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload >/dev/null 2>&1 || true
	fi
	;;
esac
`

// copyright is the Debian machine-readable copyright file around LICENSE.
func debCopyright(license []byte) []byte {
	var b bytes.Buffer
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: clawkit\nSource: " + pkgHomepage + "\n\n")
	b.WriteString("Files: *\nCopyright: 2026 The clawkit authors\nLicense: Expat\n")
	for _, l := range strings.Split(strings.TrimRight(string(license), "\n"), "\n") {
		if l == "" {
			l = "."
		}
		b.WriteString(" " + l + "\n")
	}
	return b.Bytes()
}

// gzipBytes compresses without a name or time (reproducible).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pkgFiles lays out the packages' payload in dir (shared by every target
// except the binary) and returns it as nfpm contents.
func pkgFiles(repo, work string, shared []file, bin string, mtime time.Time) (files.Contents, error) {
	dir := filepath.Join(work, "pkg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	src := map[string]string{}
	for _, f := range shared {
		src[f.name] = f.path
	}
	put := func(name string, b []byte) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, b, 0o644)
	}
	man, err := os.ReadFile(src["man/clawkit.1"])
	if err != nil {
		return nil, err
	}
	manGz, err := gzipBytes(man)
	if err != nil {
		return nil, err
	}
	manPath, err := put("clawkit.1.gz", manGz)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile(filepath.Join(repo, "LICENSE"))
	if err != nil {
		return nil, fmt.Errorf("LICENSE: %w", err)
	}
	copyrightPath, err := put("copyright", debCopyright(license))
	if err != nil {
		return nil, err
	}
	sysusersPath, err := put("sysusers.conf", []byte(sysusers))
	if err != nil {
		return nil, err
	}
	// The units name the binary where the archives' install puts it
	// (/usr/local/bin); the package puts it in /usr/bin.
	units := map[string]string{}
	for _, u := range []string{"clawkit-gateway.service", "clawkit-gateway@.service"} {
		b, err := os.ReadFile(filepath.Join(repo, "dist", "systemd", u))
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", u, err)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/clawkit"), []byte("/usr/bin/clawkit"))
		if units[u], err = put(u, b); err != nil {
			return nil, err
		}
	}
	info := func(mode os.FileMode) *files.ContentFileInfo {
		return &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: mtime}
	}
	c := files.Contents{
		{Source: bin, Destination: "/usr/bin/clawkit", FileInfo: info(0o755)},
		{Source: manPath, Destination: "/usr/share/man/man1/clawkit.1.gz", FileInfo: info(0o644)},
		{Source: src["completions/clawkit.bash"], Destination: "/usr/share/bash-completion/completions/clawkit", FileInfo: info(0o644)},
		{Source: src["completions/clawkit.fish"], Destination: "/usr/share/fish/vendor_completions.d/clawkit.fish", FileInfo: info(0o644)},
		// zsh's vendor folder differs: Debian's and Fedora's.
		{Source: src["completions/clawkit.zsh"], Destination: "/usr/share/zsh/vendor-completions/_clawkit", Packager: "deb", FileInfo: info(0o644)},
		{Source: src["completions/clawkit.zsh"], Destination: "/usr/share/zsh/site-functions/_clawkit", Packager: "rpm", FileInfo: info(0o644)},
		{Source: units["clawkit-gateway@.service"], Destination: "/usr/lib/systemd/system/clawkit-gateway@.service", FileInfo: info(0o644)},
		{Source: units["clawkit-gateway.service"], Destination: "/usr/lib/systemd/user/clawkit-gateway.service", FileInfo: info(0o644)},
		{Source: sysusersPath, Destination: "/usr/lib/sysusers.d/clawkit.conf", FileInfo: info(0o644)},
		{Source: copyrightPath, Destination: "/usr/share/doc/clawkit/copyright", Packager: "deb", FileInfo: info(0o644)},
		{Source: filepath.Join(repo, "LICENSE"), Destination: "/usr/share/licenses/clawkit/LICENSE", Type: files.TypeRPMLicense, Packager: "rpm", FileInfo: info(0o644)},
		{Source: filepath.Join(repo, "README.md"), Destination: "/usr/share/doc/clawkit/README.md", Type: files.TypeRPMDoc, Packager: "rpm", FileInfo: info(0o644)},
	}
	return c, nil
}

// writePackage builds one package. The version is clawkit's; nfpm drops
// the leading v and turns a pseudo-version's suffix into a prerelease
// (0.0.0~… for deb and rpm, sorting before 0.0.0).
func writePackage(format, dst, version, goarch string, contents files.Contents, mtime time.Time) error {
	p, err := nfpm.Get(format)
	if err != nil {
		return err
	}
	scriptPath := filepath.Join(filepath.Dir(dst), ".work", "postinst-"+format+"-"+goarch)
	if err := os.WriteFile(scriptPath, []byte(postInstall), 0o755); err != nil {
		return err
	}
	// nfpm prepares (and may rewrite) the contents it is given: a copy each time.
	own := make(files.Contents, 0, len(contents))
	for _, c := range contents {
		cc := *c
		if c.FileInfo != nil {
			fi := *c.FileInfo
			cc.FileInfo = &fi
		}
		own = append(own, &cc)
	}
	info := &nfpm.Info{
		Name:        "clawkit",
		Arch:        goarch,
		Platform:    "linux",
		Version:     version,
		Release:     "1",
		Section:     "utils",
		Priority:    "optional",
		Maintainer:  pkgMaintainer,
		Vendor:      "The clawkit authors",
		Homepage:    pkgHomepage,
		License:     "MIT",
		Description: pkgSummary + "\n" + pkgLongDesc,
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Contents: own,
			Umask:    0o022,
			Scripts:  nfpm.Scripts{PostInstall: scriptPath},
			RPM: nfpm.RPM{
				Group:   "Applications/System",
				Summary: pkgSummary,
			},
		},
	}
	// Package prepares the contents for its format itself.
	info = nfpm.WithDefaults(info)
	var buf bytes.Buffer
	if err := p.Package(info, &buf); err != nil {
		return fmt.Errorf("%s %s: %w", format, goarch, err)
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// packageName is the file name of a package: clawkit_<version>_linux_<arch>.<ext>,
// the archives' pattern, so one glob finds a release's files.
func packageName(version, goarch, format string) string {
	return fmt.Sprintf("clawkit_%s_linux_%s.%s", version, goarch, format)
}
