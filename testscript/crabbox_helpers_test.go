package testscript

// Helpers for the crabbox scripts (crabbox_*.txtar): script commands that
// build hostile exports, flip a byte, snapshot a tree (to prove "nothing
// changed"), age mtimes and make a large synthetic installation, and the
// programs that kill or signal a real install or verify.

import (
	"bufio"
	"context"
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

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

func crabboxKit() scriptKit {
	return scriptKit{
		// crabbox-kill-install and crabbox-signal-verify signal a real
		// install or verify, a process they start.
		programs: map[string]func(){
			"crabbox-kill-install":  crabboxKillInstallMain,
			"crabbox-signal-verify": crabboxSignalVerifyMain,
			"crabbox-lock-wait":     crabboxLockWaitMain,
			"crabbox-fd-limits":     crabboxFDLimitsMain,
		},
		cmds: map[string]scriptCmd{
			"crabbox-hostile-export": cmdCrabboxHostileExport,
			"crabbox-hand-export":    cmdCrabboxHandExport,
			"crabbox-layout-export":  cmdCrabboxLayoutExport,
			"crabbox-modes-export":   cmdCrabboxModesExport,
			"crabbox-many-export":    cmdCrabboxManyExport,
			"crabbox-flip":           cmdCrabboxFlip,
			"crabbox-snapshot":       cmdCrabboxSnapshot,
			"crabbox-age":            cmdCrabboxAge,
			"crabbox-big-install":    cmdCrabboxBigInstall,
		},
	}
}

// crabbox-hostile-export KIND DIR: an export in DIR whose node bootstrap is
// the named hostile archive (slip, absolute, symlink-escape,
// hardlink-escape, device, duplicate, bomb, ...) under a manifest that
// records it correctly, so only the archive rules can refuse it.
func cmdCrabboxHostileExport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: crabbox-hostile-export KIND DIR (kinds: %s)", strings.Join(archivetest.Kinds(), ", "))
	}
	if _, ok := archivetest.HostileKinds[args[0]]; !ok {
		ts.Fatalf("crabbox-hostile-export: unknown kind %q (kinds: %s)", args[0], strings.Join(archivetest.Kinds(), ", "))
	}
	handExport(ts, args[1], archivetest.Hostile(args[0]))
}

// crabbox-layout-export KIND DIR: an export in DIR whose node bootstrap
// passes every archive rule but breaks the install's layout (a link where
// the worker archive goes, a reserved name, a wrong identity, ...; see
// crabboxtest.LayoutKinds), under a correct manifest.
func cmdCrabboxLayoutExport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: crabbox-layout-export KIND DIR (kinds: %s)", strings.Join(crabboxtest.SortedLayoutKinds(), ", "))
	}
	if _, ok := crabboxtest.LayoutKinds[args[0]]; !ok {
		ts.Fatalf("crabbox-layout-export: unknown kind %q (kinds: %s)", args[0], strings.Join(crabboxtest.SortedLayoutKinds(), ", "))
	}
	handExport(ts, args[1], crabboxtest.LayoutArchive(args[0]))
}

// crabbox-modes-export DIR: an export whose node bootstrap asks for
// world-writable, sticky and set-id folders and files
// (crabboxtest.ModesArchive), under a correct manifest.
func cmdCrabboxModesExport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: crabbox-modes-export DIR")
	}
	handExport(ts, args[0], crabboxtest.ModesArchive())
}

// crabbox-many-export DIR N: a hand-made export whose node bootstrap holds
// N empty files (beyond the 250,000-entry limit when N is larger).
func cmdCrabboxManyExport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: crabbox-many-export DIR N")
	}
	n := intArg(ts, "crabbox-many-export", "count", args[1], 1)
	ents := make([]archivetest.Entry, 0, n)
	ents = append(ents, archivetest.Entry{Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"openclaw"}`)})
	for i := 1; i < n; i++ {
		ents = append(ents, archivetest.Entry{Name: "node_modules/openclaw/f/" + strconv.Itoa(i)})
	}
	handExport(ts, args[0], archivetest.Build(ents))
}

// crabbox-hand-export DIR: a well-formed hand-made export.
func cmdCrabboxHandExport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: crabbox-hand-export DIR")
	}
	handExport(ts, args[0], crabboxtest.NodeBootstrap(crabboxtest.Version))
}

// handExport writes a hand-made export of the node bootstrap archive tgz
// into the script's folder dir.
func handExport(ts *testscript.TestScript, dir string, tgz []byte) {
	if _, err := crabboxtest.HandExport(ts.MkAbs(dir), tgz); err != nil {
		ts.Fatalf("%v", err)
	}
}

// crabbox-flip FILE [OFFSET]: invert one byte (default the 100th) in place
// (size unchanged). FILE may be a glob matching exactly one file.
func cmdCrabboxFlip(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: crabbox-flip FILE [OFFSET]")
	}
	matches, _ := filepath.Glob(ts.MkAbs(args[0]))
	if len(matches) != 1 {
		ts.Fatalf("crabbox-flip: %s matches %d files", args[0], len(matches))
	}
	off := int64(100)
	if len(args) == 2 {
		var err error
		if off, err = strconv.ParseInt(args[1], 10, 64); err != nil {
			ts.Fatalf("crabbox-flip: %v", err)
		}
	}
	if err := flipByte(matches[0], off); err != nil {
		ts.Fatalf("crabbox-flip: %v", err)
	}
}

// crabbox-snapshot DIR: prints one line per path below DIR with type,
// mode, inode, mtime (ns), size and content SHA-256 (or link target),
// sorted. Two equal snapshots mean nothing was created, removed, replaced
// or modified.
func cmdCrabboxSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: crabbox-snapshot DIR")
	}
	lines, err := treeSnapshot(ts.MkAbs(args[0]), args[0])
	if err != nil {
		ts.Fatalf("crabbox-snapshot: %v", err)
	}
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}

// treeSnapshot is crabbox-snapshot's lines for the tree at root, each path
// shown below shown (the folder as the script names it) rather than below
// the absolute root.
func treeSnapshot(root, shown string) ([]string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		ino := uint64(0)
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			ino = s.Ino
		}
		line := fmt.Sprintf("%s %v ino=%d mtime=%d size=%d", filepath.Join(shown, rel), st.Mode(), ino, st.ModTime().UnixNano(), st.Size())
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
	sort.Strings(lines)
	return lines, err
}

// crabbox-age DIR: move every mtime below DIR (and DIR's) one hour back,
// so that any later write shows in a snapshot.
func cmdCrabboxAge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: crabbox-age DIR")
	}
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		ts.Fatalf("crabbox-age: %v", err)
	}
}

// crabbox-big-install DIR FILES: a synthetic installation (package root
// DIR/node_modules/openclaw) with FILES source files of 16 KiB, so that
// extracting its export takes long enough to be interrupted.
func cmdCrabboxBigInstall(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: crabbox-big-install DIR FILES")
	}
	n := intArg(ts, "crabbox-big-install", "count", args[1], 0)
	if err := bigInstallation(ts.MkAbs(args[0]), n); err != nil {
		ts.Fatalf("crabbox-big-install: %v", err)
	}
}

// bigInstallation is crabbox-big-install's work.
func bigInstallation(dir string, n int) error {
	root, err := crabboxtest.Installation(dir)
	if err != nil {
		return err
	}
	for i := range n {
		p := filepath.Join(root, "dist", "chunks", fmt.Sprintf("c%03d", i/100), fmt.Sprintf("chunk-%05d.js", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, archivetest.Text(uint64(1000+i), 16<<10), 0o644); err != nil {
			return err
		}
	}
	return nil
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

// crabbox-lock-wait MANIFEST HOME TERM|INT|busy|release: holds the runtime's
// lock through the package's own API (crabbox.LockRuntime, as another
// command of this runtime would) and runs a real install meanwhile.
// TERM/INT: once the install says it is waiting for the lock, send the
// signal; it must exit 1 (interrupted) within the 2 s grace plus slack.
// busy: the install, with --lock-wait 1s, must give up with exit 5
// (runtime_lock_busy). release: once it waits, the lock is released, and
// the install must then succeed. An install that never says it waits is
// signalled anyway after 20 s (an install that ignores the lock's wait
// then shows as ignoring the signal).
func crabboxLockWaitMain() {
	if len(os.Args) != 4 {
		die("usage: crabbox-lock-wait MANIFEST HOME TERM|INT|busy|release")
	}
	mode := os.Args[3]
	in, err := crabbox.LoadInputs(os.Args[1], crabbox.Expect{})
	if err != nil {
		die("%v", err)
	}
	l, err := crabbox.LayoutFor(os.Args[2], in.Manifest)
	if err != nil {
		die("%v", err)
	}
	if err := os.MkdirAll(l.RuntimesDir, 0o755); err != nil {
		die("%v", err)
	}
	lock, err := crabbox.LockRuntime(context.Background(), l, time.Minute)
	if err != nil {
		die("%v", err)
	}
	defer lock.Unlock()
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	args := []string{"--progress=always", "crabbox", "install", "--manifest", os.Args[1], "--target-home", os.Args[2]}
	if mode == "busy" {
		args = append(args, "--lock-wait", "1s")
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		die("%v", err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var rest []string
	waiting := false
	for hang := time.After(20 * time.Second); !waiting; {
		select {
		case ln, ok := <-lines:
			if !ok {
				waiting = true // ended: judged below
				break
			}
			rest = append(rest, ln)
			waiting = strings.Contains(ln, "waiting for another install of this runtime")
		case <-hang:
			waiting = true
		}
	}
	exited := make(chan struct{})
	go func() {
		for ln := range lines {
			rest = append(rest, ln)
		}
		cmd.Wait()
		close(exited)
	}()
	switch mode {
	case "TERM", "INT":
		sig := syscall.SIGTERM
		if mode == "INT" {
			sig = syscall.SIGINT
		}
		cmd.Process.Signal(sig)
		select {
		case <-exited:
		case <-time.After(2*time.Second + 8*time.Second):
			cmd.Process.Kill()
			<-exited
			die("the install waiting for the lock ignored %v", sig)
		}
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(strings.Join(rest, "\n"), "install interrupted by a signal") {
			die("after %v the waiting install ended with %v: %s", sig, cmd.ProcessState, strings.Join(rest, "\n"))
		}
		fmt.Println("stopped while waiting for the lock")
	case "busy":
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			die("the install with --lock-wait 1s did not give up")
		}
		if cmd.ProcessState.ExitCode() != 5 || !strings.Contains(strings.Join(rest, "\n"), "gave up waiting") {
			die("the install ended with %v: %s", cmd.ProcessState, strings.Join(rest, "\n"))
		}
		fmt.Println("gave up waiting for the lock")
	case "release":
		lock.Unlock()
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			<-exited
			die("the install did not finish after the lock was released")
		}
		if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(stdout.String(), `"status":"installed"`) {
			die("the install ended with %v: %s%s", cmd.ProcessState, stdout.String(), strings.Join(rest, "\n"))
		}
		fmt.Println("installed once the lock was released")
	default:
		die("unknown mode %s", mode)
	}
}

// crabbox-fd-limits MANIFEST HOME FROM TO: runs `clawkit crabbox install`
// into HOME (which must not exist) under each open-file limit from FROM to
// TO (`ulimit -n`, through sh), so that it fails for want of descriptors
// (EMFILE) at every point of the install in turn. A failed run must leave
// nothing: HOME still does not exist. A successful one must verify; its
// HOME is then removed for the next limit. It fails unless at least one
// run failed on EMFILE and one succeeded, and prints the tally.
func crabboxFDLimitsMain() {
	if len(os.Args) != 5 {
		die("usage: crabbox-fd-limits MANIFEST HOME FROM TO")
	}
	from, err1 := strconv.Atoi(os.Args[3])
	to, err2 := strconv.Atoi(os.Args[4])
	if err1 != nil || err2 != nil || from < 1 || to < from {
		die("crabbox-fd-limits: bad limits %s %s", os.Args[3], os.Args[4])
	}
	mp, home := os.Args[1], os.Args[2]
	if _, err := os.Lstat(home); err == nil {
		die("crabbox-fd-limits: %s exists", home)
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	failed, installed := 0, 0
	for n := from; n <= to; n++ {
		cmd := exec.Command("sh", "-c", `ulimit -n "$1" && exec "$2" crabbox install --manifest "$3" --target-home "$4"`, "sh", strconv.Itoa(n), bin, mp, home)
		out, err := cmd.CombinedOutput()
		if err == nil {
			v, verr := exec.Command(bin, "crabbox", "verify", "--deep", "--manifest", mp, "--target-home", home).CombinedOutput()
			if verr != nil {
				die("ulimit -n %d: the install succeeded but does not verify: %s", n, v)
			}
			installed++
			os.RemoveAll(home)
			continue
		}
		if _, err := os.Lstat(home); err == nil {
			var left []string
			filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
				left = append(left, p)
				return nil
			})
			die("ulimit -n %d: the failed install left %d paths (%s ...):\n%s", n, len(left), strings.Join(left[:min(len(left), 5)], " "), out)
		}
		if strings.Contains(string(out), "too many open files") {
			if !strings.Contains(string(out), "clawkit: error:") {
				die("ulimit -n %d: no error line: %s", n, out)
			}
			failed++
		}
	}
	if failed == 0 || installed == 0 {
		die("crabbox-fd-limits: %d runs failed on EMFILE, %d installed: widen the range", failed, installed)
	}
	fmt.Printf("EMFILE failures left nothing; %d failed, %d installed\n", failed, installed)
}
