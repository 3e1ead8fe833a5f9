package testscript

// Helpers for the crabbox scripts (crabbox_*.txtar): hostile export
// builders, a byte flipper, a tree snapshot (to prove "nothing changed"),
// an mtime ager, a large synthetic installation and a kill -9 driver.

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

func crabboxKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"crabbox-hostile-export": crabboxHostileExportMain,
			"crabbox-hand-export":    crabboxHandExportMain,
			"crabbox-layout-export":  crabboxLayoutExportMain,
			"crabbox-many-export":    crabboxManyExportMain,
			"crabbox-flip":           crabboxFlipMain,
			"crabbox-snapshot":       crabboxSnapshotMain,
			"crabbox-age":            crabboxAgeMain,
			"crabbox-big-install":    crabboxBigInstallMain,
			"crabbox-kill-install":   crabboxKillInstallMain,
			"crabbox-signal-verify":  crabboxSignalVerifyMain,
		},
	}
}

// crabbox-hostile-export KIND DIR: an export in DIR whose node bootstrap is
// the named hostile archive (slip, absolute, symlink-escape,
// hardlink-escape, device, duplicate, bomb, ...) under a manifest that
// records it correctly, so only the archive rules can refuse it.
func crabboxHostileExportMain() {
	if len(os.Args) != 3 {
		die("usage: crabbox-hostile-export KIND DIR (kinds: %s)", strings.Join(archivetest.Kinds(), ", "))
	}
	if _, ok := archivetest.HostileKinds[os.Args[1]]; !ok {
		die("unknown kind %q (kinds: %s)", os.Args[1], strings.Join(archivetest.Kinds(), ", "))
	}
	if _, err := crabboxtest.HandExport(os.Args[2], archivetest.Hostile(os.Args[1])); err != nil {
		die("%v", err)
	}
}

// crabbox-layout-export KIND DIR: an export in DIR whose node bootstrap
// passes every archive rule but breaks the install's layout (a link where
// the worker archive goes, a reserved name, a wrong identity, ...; see
// crabboxtest.LayoutKinds), under a correct manifest.
func crabboxLayoutExportMain() {
	if len(os.Args) != 3 {
		die("usage: crabbox-layout-export KIND DIR (kinds: %s)", strings.Join(crabboxtest.SortedLayoutKinds(), ", "))
	}
	if _, ok := crabboxtest.LayoutKinds[os.Args[1]]; !ok {
		die("unknown kind %q (kinds: %s)", os.Args[1], strings.Join(crabboxtest.SortedLayoutKinds(), ", "))
	}
	if _, err := crabboxtest.HandExport(os.Args[2], crabboxtest.LayoutArchive(os.Args[1])); err != nil {
		die("%v", err)
	}
}

// crabbox-many-export DIR N: a hand-made export whose node bootstrap holds
// N empty files (beyond the 250,000-entry limit when N is larger).
func crabboxManyExportMain() {
	if len(os.Args) != 3 {
		die("usage: crabbox-many-export DIR N")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		die("%v", err)
	}
	ents := make([]archivetest.Entry, 0, n)
	ents = append(ents, archivetest.Entry{Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"openclaw"}`)})
	for i := 1; i < n; i++ {
		ents = append(ents, archivetest.Entry{Name: "node_modules/openclaw/f/" + strconv.Itoa(i)})
	}
	if _, err := crabboxtest.HandExport(os.Args[1], archivetest.Build(ents)); err != nil {
		die("%v", err)
	}
}

// crabbox-hand-export DIR: a well-formed hand-made export.
func crabboxHandExportMain() {
	if len(os.Args) != 2 {
		die("usage: crabbox-hand-export DIR")
	}
	if _, err := crabboxtest.HandExport(os.Args[1], crabboxtest.NodeBootstrap(crabboxtest.Version)); err != nil {
		die("%v", err)
	}
}

// crabbox-flip FILE [OFFSET]: invert one byte in place (size unchanged).
// FILE may be a glob matching exactly one file.
func crabboxFlipMain() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		die("usage: crabbox-flip FILE [OFFSET]")
	}
	matches, _ := filepath.Glob(os.Args[1])
	if len(matches) != 1 {
		die("%s matches %d files", os.Args[1], len(matches))
	}
	off := int64(100)
	if len(os.Args) == 3 {
		off, _ = strconv.ParseInt(os.Args[2], 10, 64)
	}
	f, err := os.OpenFile(matches[0], os.O_RDWR, 0)
	if err != nil {
		die("%v", err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		die("%v", err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		die("%v", err)
	}
}

// crabbox-snapshot DIR: one line per path below DIR with type, mode, inode,
// mtime (ns), size and content SHA-256 (or link target), sorted. Two equal
// snapshots mean nothing was created, removed, replaced or modified.
func crabboxSnapshotMain() {
	if len(os.Args) != 2 {
		die("usage: crabbox-snapshot DIR")
	}
	var lines []string
	err := filepath.WalkDir(os.Args[1], func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		ino := uint64(0)
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			ino = s.Ino
		}
		line := fmt.Sprintf("%s %v ino=%d mtime=%d size=%d", p, st.Mode(), ino, st.ModTime().UnixNano(), st.Size())
		switch {
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		case st.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			line += " -> " + t
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		die("%v", err)
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

// crabbox-age DIR: move every mtime below DIR (and DIR's) one hour back,
// so that any later write shows in a snapshot.
func crabboxAgeMain() {
	if len(os.Args) != 2 {
		die("usage: crabbox-age DIR")
	}
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(os.Args[1], func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		die("%v", err)
	}
}

// crabbox-big-install DIR FILES: a synthetic installation (package root
// DIR/node_modules/openclaw) with FILES source files of 16 KiB, so that
// extracting its export takes long enough to be interrupted.
func crabboxBigInstallMain() {
	if len(os.Args) != 3 {
		die("usage: crabbox-big-install DIR FILES")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		die("%v", err)
	}
	root, err := crabboxtest.Installation(os.Args[1])
	if err != nil {
		die("%v", err)
	}
	for i := range n {
		p := filepath.Join(root, "dist", "chunks", fmt.Sprintf("c%03d", i/100), fmt.Sprintf("chunk-%05d.js", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			die("%v", err)
		}
		if err := os.WriteFile(p, archivetest.Text(uint64(1000+i), 16<<10), 0o644); err != nil {
			die("%v", err)
		}
	}
}

// crabbox-kill-install MANIFEST HOME: start `clawkit crabbox install`, wait
// until its staging folder appears (extraction has begun), SIGKILL it, and
// report. It fails unless the process really died of SIGKILL while its
// staging folder existed, i.e. mid-install.
// crabbox-kill-install MANIFEST HOME [TERM|INT]: runs a real install and,
// once its staging folder exists, sends SIGKILL (default) or the named
// signal. With SIGKILL it checks the process died mid-install (staging left
// behind); with TERM/INT it checks the process exits 1 on its own within
// the documented 2 s grace (plus generous slack for a loaded machine) and
// removed its staging folder.
// crabbox-signal-verify MANIFEST HOME: run `crabbox verify --deep`, send
// SIGTERM once its progress line says the deep check has started, and check
// it stops within the 2 s grace (plus slack for a loaded machine) with
// exit 1 and the interrupted error.
func crabboxSignalVerifyMain() {
	if len(os.Args) != 3 {
		die("usage: crabbox-signal-verify MANIFEST HOME")
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	cmd := exec.Command(bin, "--progress=always", "crabbox", "verify", "--deep", "--manifest", os.Args[1], "--target-home", os.Args[2])
	stderr, err := cmd.StderrPipe()
	if err != nil {
		die("%v", err)
	}
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	sc := bufio.NewScanner(stderr)
	var rest []string
	for sc.Scan() {
		if strings.Contains(sc.Text(), "and every installed file") {
			break // the readiness signal: deep hashing starts now
		}
		rest = append(rest, sc.Text())
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	cmd.Wait()
	took := time.Since(sent)
	if cmd.ProcessState.ExitCode() == 0 {
		die("verify finished before the signal landed; use a larger installation")
	}
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(strings.Join(rest, "\n"), "verification interrupted by a signal") {
		die("after SIGTERM verify ended with %v: %s", cmd.ProcessState, strings.Join(rest, "\n"))
	}
	if took > 2*time.Second+8*time.Second {
		die("verify took %v to stop after SIGTERM", took)
	}
	fmt.Println("verify stopped on SIGTERM")
}

func crabboxKillInstallMain() {
	if len(os.Args) != 3 && len(os.Args) != 4 {
		die("usage: crabbox-kill-install MANIFEST HOME [TERM|INT]")
	}
	sig := syscall.SIGKILL
	if len(os.Args) == 4 {
		switch os.Args[3] {
		case "TERM":
			sig = syscall.SIGTERM
		case "INT":
			sig = syscall.SIGINT
		default:
			die("unknown signal %s", os.Args[3])
		}
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	rts := filepath.Join(os.Args[2], filepath.FromSlash(crabbox.RuntimesDir))
	cmd := exec.Command(bin, "crabbox", "install", "--manifest", os.Args[1], "--target-home", os.Args[2])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	staging := ""
	deadline := time.Now().Add(2 * time.Minute) // hang guard only
	for staging == "" {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			die("no staging folder appeared")
		}
		ents, _ := os.ReadDir(rts)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".staging-") {
				staging = e.Name()
			}
		}
		if staging == "" {
			time.Sleep(time.Millisecond)
		}
	}
	sent := time.Now()
	cmd.Process.Signal(sig)
	cmd.Wait()
	took := time.Since(sent)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if sig != syscall.SIGKILL {
		if ws.Signaled() || ws.ExitStatus() != 1 {
			die("after %v the install ended with %v, want exit 1", sig, cmd.ProcessState)
		}
		if took > 2*time.Second+8*time.Second {
			die("the install took %v to stop after %v", took, sig)
		}
		if _, err := os.Lstat(filepath.Join(rts, staging)); err == nil {
			die("stopped by %v, but the staging folder %s is left behind", sig, staging)
		}
		fmt.Println("stopped mid-install, staging removed")
		return
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		die("install finished before the kill (%v); use a larger installation", cmd.ProcessState)
	}
	if _, err := os.Lstat(filepath.Join(rts, staging)); err != nil {
		die("killed, but the staging folder %s is gone: the kill did not land mid-install", staging)
	}
	fmt.Println("killed mid-install")
}
