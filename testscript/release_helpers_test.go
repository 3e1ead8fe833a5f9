package testscript

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"go.yaml.in/yaml/v3"
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
			"sha256-env":   cmdSHA256Env,
			"action-run":   cmdActionRun,
			"keygen":       cmdKeygen,
			"sign-blob":    cmdSignBlob,
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
	go func() { _ = srv.Serve(l) }() // ends with ErrServerClosed at the Close below
	// The script is over: a failed close changes none of its results.
	ts.Defer(func() { _ = srv.Close() })
	ts.Setenv(args[1], "http://"+l.Addr().String())
}

// fake-release [-reports V] [-man-link TARGET] DIR VERSION OS/ARCH...:
// writes clawkit_VERSION_OS_ARCH.tar.gz for each platform into DIR, each
// holding a `clawkit` that is a small sh script answering `--json version`
// with VERSION (or V) and `completion SHELL` with a comment naming the
// shell, README.md and man/clawkit.1 (with -man-link, a symbolic link to
// TARGET), and SHA256SUMS over them, as make release lays them out.
func cmdFakeRelease(ts *testscript.TestScript, neg bool, args []string) {
	reports, manLink := "", ""
	for len(args) > 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-reports":
			reports = args[1]
		case "-man-link":
			manLink = args[1]
		default:
			ts.Fatalf("fake-release: unknown option %s", args[0])
		}
		args = args[2:]
	}
	if neg || len(args) < 3 {
		ts.Fatalf("usage: fake-release [-reports V] [-man-link TARGET] DIR VERSION OS/ARCH...")
	}
	dir, version := ts.MkAbs(args[0]), args[1]
	if reports == "" {
		reports = version
	}
	ts.Check(os.MkdirAll(dir, 0o755))
	//nolint:gocritic // sprintfQuotedString: JSON text inside a shell script, which %q would change
	bin := fmt.Sprintf("#!/bin/sh\n# fake clawkit\ncase \"$*\" in\n*--json*) printf '{\\n  \"version\": \"%s\"\\n}\\n' ;;\ncompletion*) echo \"# clawkit completion $2\" ;;\n*) echo 'clawkit %s' ;;\nesac\n", reports, reports)
	var names []string
	for _, p := range args[2:] {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			ts.Fatalf("fake-release: %q is not OS/ARCH", p)
		}
		name := fmt.Sprintf("clawkit_%s_%s_%s.tar.gz", version, goos, goarch)
		files := map[string]string{"clawkit": bin, "README.md": "# clawkit\n", "man/clawkit.1": ".TH CLAWKIT 1\n"}
		if manLink != "" {
			files["man/clawkit.1"] = "->" + manLink
		}
		ts.Check(os.WriteFile(filepath.Join(dir, name), tarGz(ts, files), 0o644))
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
		// A value "->TARGET" is a symbolic link to TARGET.
		if target, ok := strings.CutPrefix(files[n], "->"); ok {
			ts.Check(tw.WriteHeader(&tar.Header{Name: n, Mode: 0o777, Linkname: target, Typeflag: tar.TypeSymlink}))
			continue
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

// sha256-env FILE VAR: sets $VAR to FILE's SHA-256 (lower-case hex).
func cmdSHA256Env(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sha256-env FILE VAR")
	}
	h := sha256.Sum256([]byte(ts.ReadFile(args[0])))
	ts.Setenv(args[1], hex.EncodeToString(h[:]))
}

// action is the part of a composite action.yml that action-run reads.
type action struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`)

// action-run [NAME=VALUE|NAME@=FILE...]: runs $REPO/action.yml's composite steps as a
// runner would: each step's env with ${{ inputs.* }} (the given values,
// else the defaults; a required input missing is an error) and
// ${{ github.* }} expanded (github.action_path is $REPO; others may be given
// as github.NAME=VALUE), RUNNER_TEMP=$WORK/runner-temp, and GITHUB_PATH and
// GITHUB_OUTPUT the files github_path and github_output of $WORK. The run
// text itself must hold no expression: every value reaches it through env,
// never by text substitution into the script.
func cmdActionRun(ts *testscript.TestScript, neg bool, args []string) {
	var a action
	if err := yaml.Unmarshal([]byte(ts.ReadFile(ts.Getenv("REPO")+"/action.yml")), &a); err != nil {
		ts.Fatalf("action-run: action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		ts.Fatalf("action-run: runs.using is %q, want composite", a.Runs.Using)
	}
	vals := map[string]string{"github.action_path": ts.Getenv("REPO"), "github.server_url": "https://github.invalid", "github.action_repository": ""}
	for name, in := range a.Inputs {
		vals["inputs."+name] = in.Default
	}
	given := map[string]bool{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("usage: action-run [NAME=VALUE...]")
		}
		// NAME@=FILE: the value is FILE's text without its last newline
		// (a value a script line cannot hold: a newline, a PEM key).
		if name, isFile := strings.CutSuffix(k, "@"); isFile {
			k, v = name, strings.TrimSuffix(ts.ReadFile(v), "\n")
		}
		if !strings.HasPrefix(k, "github.") {
			if _, ok := a.Inputs[k]; !ok {
				ts.Fatalf("action-run: action.yml has no input %q", k)
			}
			k = "inputs." + k
		}
		vals[k], given[k] = v, true
	}
	for name, in := range a.Inputs {
		if in.Required && !given["inputs."+name] {
			ts.Fatalf("action-run: required input %q not given", name)
		}
	}
	work := ts.Getenv("WORK")
	ts.Check(os.MkdirAll(filepath.Join(work, "runner-temp"), 0o755))
	var stdout, stderr bytes.Buffer
	var runErr error
	for i, st := range a.Runs.Steps {
		if ghExpr.MatchString(st.Run) {
			ts.Fatalf("action-run: step %d's run text holds an expression; pass values through env", i)
		}
		if st.Shell != "bash" {
			ts.Fatalf("action-run: step %d's shell is %q, want bash", i, st.Shell)
		}
		env := append(os.Environ(), "RUNNER_TEMP="+filepath.Join(work, "runner-temp"),
			"GITHUB_PATH="+filepath.Join(work, "github_path"), "GITHUB_OUTPUT="+filepath.Join(work, "github_output"))
		for k, v := range st.Env {
			env = append(env, k+"="+ghExpr.ReplaceAllStringFunc(v, func(m string) string {
				key := ghExpr.FindStringSubmatch(m)[1]
				val, ok := vals[key]
				if !ok {
					ts.Fatalf("action-run: step %d uses ${{ %s }}, which the runner stand-in does not know", i, key)
				}
				return val
			}))
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", st.Run)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, &stdout, &stderr
		if runErr = cmd.Run(); runErr != nil {
			break
		}
	}
	_, _ = fmt.Fprint(ts.Stdout(), stdout.String()) // the script's stdout buffer: cannot fail
	_, _ = fmt.Fprint(ts.Stderr(), stderr.String()) // the script's stderr buffer: cannot fail
	if (runErr != nil) != neg {
		ts.Fatalf("action-run: %v (negated: %v)", runErr, neg)
	}
}

// keygen NAME: writes a fresh ECDSA P-256 key pair as NAME.key (PKCS #8
// PEM) and NAME.pub (PKIX PEM), as `openssl genpkey` and `openssl pkey
// -pubout` would.
func cmdKeygen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: keygen NAME")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	ts.Check(err)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644))
}

// sign-blob KEYFILE FILE: writes FILE.sig, the base64 ASN.1 signature of
// FILE's SHA-256 (cosign's blob signature format, as make release signs).
func cmdSignBlob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sign-blob KEYFILE FILE")
	}
	blk, _ := pem.Decode([]byte(ts.ReadFile(args[0])))
	if blk == nil {
		ts.Fatalf("sign-blob: %s holds no PEM", args[0])
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	ts.Check(err)
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		ts.Fatalf("sign-blob: not an ECDSA key")
	}
	h := sha256.Sum256([]byte(ts.ReadFile(args[1])))
	sig, err := key.Sign(rand.Reader, h[:], crypto.SHA256)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]+".sig"), []byte(base64.StdEncoding.EncodeToString(sig)), 0o644))
}
