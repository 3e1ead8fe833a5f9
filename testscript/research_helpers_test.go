package testscript

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/ops"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
	"github.com/clawkit/clawkit/pkg/research/officetest"
)

// Research scripts (research_*.txtar) each get their own fake Interactions
// API, started in this test process before the script runs:
// $CLAWKIT_GOOGLE_BASE_URL points at it and every request it receives is
// appended to $WORK/fakegoogle.log as one JSON line ("req":"POST
// /interactions", ...), so scripts can grep the log to prove how many
// requests were (or were not) sent. CLAWKIT_RESEARCH_TIME_SCALE=1000 makes
// the poll intervals and budgets fast. Scenarios are chosen by "fake:NAME"
// words in the question (see package fakeapi).
func researchKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"fakegoogle": fakeGoogleMain,
		},
		cmds: map[string]scriptCmd{
			"figure-is":  cmdFigureIs,
			"officedoc":  cmdOfficeDoc,
			"sparsefile": cmdSparseFile,
		},
		conditions: map[string]func() (bool, error){
			"genai": genaiPeer,
		},
		setups: []func(*testscript.Env) error{
			researchSetup,
		},
	}
}

// genaiPeer reports whether Google's npm client (@google/genai) is
// installed at the version peers/package.json pins, so the conformance
// script runs Google's code, not an older copy some other package pulled
// in. In CI a missing or different version is an error, not a skip.
func genaiPeer() (bool, error) {
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var got struct {
		Version string `json:"version"`
	}
	pj, err := os.ReadFile(filepath.Join(repoRoot(), "peers", "package.json"))
	if err == nil {
		err = json.Unmarshal(pj, &pins)
	}
	if err != nil {
		return false, err
	}
	want := pins.Dependencies["@google/genai"]
	b, err := os.ReadFile(filepath.Join(peersDir(), "@google", "genai", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &got)
	}
	if err == nil && got.Version == want {
		return true, nil
	}
	if os.Getenv("CI") != "" {
		return false, fmt.Errorf("npm peer @google/genai %s is not installed under peers/node_modules (found %q, %w); .ci/run installs it", want, got.Version, err)
	}
	return false, nil
}

func researchSetup(env *testscript.Env) error {
	n, ok := env.T().(interface{ Name() string })
	if !ok || !strings.Contains(n.Name(), "/research_") {
		return nil
	}
	return startFakeGoogle(env)
}

// startFakeGoogle starts the script's fake Interactions API (request log
// fakegoogle.log in $WORK) and points clawkit at it, 1000x time scale.
func startFakeGoogle(env *testscript.Env) error {
	l, err := fakeapi.Start(filepath.Join(env.WorkDir, "fakegoogle.log"))
	if err != nil {
		return err
	}
	env.Defer(l.Close)
	env.Values[fakeGoogleKey{}] = l
	env.Setenv("CLAWKIT_GOOGLE_BASE_URL", l.URL)
	env.Setenv("FAKEGOOGLE_URL", l.URL)
	// Poll intervals and budgets run 1000× faster (5 s → 5 ms, 65 min →
	// 3.9 s); scripts that need real time override it.
	env.Setenv("CLAWKIT_RESEARCH_TIME_SCALE", "1000")
	return nil
}

// fakeGoogleKey finds the script's fake (startFakeGoogle) in its values.
type fakeGoogleKey struct{}

// fakegoogle-finish HANDLE: the script's fake ends interaction HANDLE now,
// with its scenario's final status, as the provider finishes one between
// two polls (fakeapi.Server.Finish): only a follower of its stream sees it
// before the next poll.
func cmdFakeGoogleFinish(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakegoogle-finish HANDLE")
	}
	l, ok := ts.Value(fakeGoogleKey{}).(*fakeapi.Listener)
	if !ok {
		ts.Fatalf("fakegoogle-finish: this script has no fake Interactions API")
	}
	if !l.Finish(args[0]) {
		ts.Fatalf("fakegoogle-finish: no running interaction %s", args[0])
	}
}

// fakegoogle URLFILE LOGFILE: a standalone fake on 127.0.0.1:0 (for use
// outside this harness, e.g. by hand or from a benchmark script). It writes
// its base URL to URLFILE (atomically, once it listens), logs requests to
// LOGFILE and serves until SIGTERM/SIGINT.
func fakeGoogleMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fakegoogle URLFILE LOGFILE")
		os.Exit(2)
	}
	if err := fakeapi.Serve(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestOperationScopesDocumented keeps the table of operations, versions
// and scopes in docs/research.md in step with the registry: every
// registered operation is listed once with the scope it needs and whether
// it writes, and nothing else is listed.
func TestOperationScopesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "research.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+\\.[a-z.]+\\.v[0-9]+)` \\| `(operator\\.[a-z]+)` \\| (yes|no) \\|$")
	listed := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := listed[m[1]]; dup {
			t.Errorf("%s listed twice", m[1])
		}
		listed[m[1]] = m[2] + " " + m[3]
	}
	reg := ops.Registry()
	for _, name := range reg.Names() {
		m, _ := reg.LookupWire(name)
		want := m.NeedScope() + " no"
		if m.Write {
			want = m.NeedScope() + " yes"
		}
		if got, ok := listed[name]; !ok {
			t.Errorf("operation %s (%s) is not documented in docs/research.md", name, want)
		} else if got != want {
			t.Errorf("docs/research.md lists %s as %q; the registry says %q", name, got, want)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("docs/research.md lists %s, which is not registered", name)
	}
}

// figure-is FILE N: FILE holds exactly the fake's figure N (fakeapi.FigurePNGs,
// 0 the red pixel, 1 the blue one), byte for byte.
func cmdFigureIs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: figure-is FILE N")
	}
	n := intArg(ts, "figure-is", "N", args[1], 0)
	figs := fakeapi.FigurePNGs()
	if n >= len(figs) {
		ts.Fatalf("figure-is: the fake has %d figures", len(figs))
	}
	if got := ts.ReadFile(args[0]); got != string(figs[n]) {
		ts.Fatalf("figure-is: %s is not the fake's figure %d (%d bytes)", args[0], n, len(got))
	}
}

// officedoc KIND PATH: write the smallest file of an Office or
// OpenDocument KIND (docx, dotx, xlsx, pptx, odt, ods, odp, doc, xls, ppt)
// that the input sniffer recognises (package officetest).
func cmdOfficeDoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: officedoc KIND PATH")
	}
	b, err := officetest.Build(args[0])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}

// sparsefile PATH SIZE PREFIX-FILE: a file of SIZE bytes that begins with
// PREFIX-FILE's content and holds nothing else (sparse: a file beyond the
// upload bound costs no disk).
func cmdSparseFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: sparsefile PATH SIZE PREFIX-FILE")
	}
	size, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	p := ts.MkAbs(args[0])
	ts.Check(os.WriteFile(p, []byte(ts.ReadFile(args[2])), 0o644))
	ts.Check(os.Truncate(p, size))
}
