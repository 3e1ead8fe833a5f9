package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
)

// The argv pre-scan finds the command word past the global flags (and
// their separate values), so only that group's tree is built.
func TestFirstCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"session", "show", "x"}, "session"},
		{[]string{"--home", "/h", "session"}, "session"},
		{[]string{"--home=/h", "auth", "list"}, "auth"},
		{[]string{"--json", "--lock-timeout", "5s", "--progress", "never", "--gateway", "unix:/s", "research"}, "research"},
		{[]string{"help", "skill", "write"}, "skill"},
		{[]string{"help"}, ""},
		{[]string{"--json"}, ""},
		{[]string{"--", "session"}, ""},
		// A value flag at the end takes nothing: no command.
		{[]string{"--home"}, ""},
	} {
		if got := firstCommand(c.args); got != c.want {
			t.Errorf("firstCommand(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// A command naming its group builds that group alone; version and
// completion build none; help at the root, an unknown word and shell
// completion build the whole tree.
func TestCommandGroups(t *testing.T) {
	all := len(allGroups())
	for _, c := range []struct {
		args     []string
		complete bool
		want     int
	}{
		{[]string{"session", "show", "x"}, false, 1},
		{[]string{"--home", "/h", "skill", "list"}, false, 1},
		{[]string{"version"}, false, 0},
		{[]string{"completion", "bash"}, false, 0},
		{[]string{"nosuch"}, false, all},
		{nil, false, all},
		{[]string{"session", "show"}, true, all},
	} {
		if got := len(commandGroups(c.args, c.complete)); got != c.want {
			t.Errorf("commandGroups(%q, %v): %d groups, want %d", c.args, c.complete, got, c.want)
		}
	}
	seen := map[string]bool{}
	for _, g := range allGroups() {
		if seen[g.name] || g.name == "" || g.help == "" || g.cmd == nil {
			t.Errorf("group %q is a duplicate or incomplete", g.name)
		}
		seen[g.name] = true
	}
}

// --json is honoured before the parse (for parse errors), but not as an
// argument after "--" nor when it is turned off.
func TestJSONRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--json", "x"}, true},
		{[]string{"x", "--json=true"}, true},
		{[]string{"x", "--json=false"}, false},
		{[]string{"--", "--json"}, false},
		{[]string{"x"}, false},
	} {
		if got := jsonRequested(c.args); got != c.want {
			t.Errorf("jsonRequested(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// Flag mapping: `research start` hands the flags to the operation as they
// are, --out made absolute and carried only with --wait.
func TestResearchStartParams(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := ResearchStartCmd{researchIdentity: researchIdentity{Agent: "a", Session: "s"}, Question: "q", OutputFormat: "markdown",
		MaxReportBytes: 1000, IdempotencyKey: "k", Wait: true, Timeout: -time.Millisecond, Out: "r.md"}
	p, err := c.params()
	if err != nil {
		t.Fatal(err)
	}
	want := research.StartParams{Caller: research.Caller{AgentID: "a", SessionKey: "s"}, Question: "q", OutputFormat: "markdown",
		MaxReportBytes: 1000, IdempotencyKey: "k", Wait: &research.StartWait{TimeoutMs: -1, Out: filepath.Join(wd, "r.md")}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("params %+v (wait %+v), want %+v (wait %+v)", p, p.Wait, want, want.Wait)
	}
	// The operation's Check refuses the negative timeout; the command
	// itself does not (one place for the rule).
	if _, err := research.CheckStart(p); errs.CodeOf(err) != errs.CodeInvalidTimeout || !strings.Contains(err.Error(), "--timeout") {
		t.Fatalf("Check on a negative --timeout: %v", err)
	}
	c.Wait = false
	if _, err := c.params(); errs.CodeOf(err) != CodeUsage || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("--out without --wait: %v", err)
	}
	c.Out = ""
	if _, err := c.params(); errs.CodeOf(err) != errs.CodeInvalidTimeout || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("--timeout without --wait: %v", err)
	}
	c.Timeout = 0
	if p, err := c.params(); err != nil || p.Wait != nil {
		t.Fatalf("without --wait: %+v %v", p, err)
	}
}

// Each session verb runs its own operation.
func TestSessionVerbs(t *testing.T) {
	want := map[string]string{"create": core.OpSessionCreate.Name, "show": core.OpSessionShow.Name, "reset": core.OpSessionReset.Name,
		"revoke": core.OpSessionRevoke.Name, "refreshing": core.OpSessionRefreshing.Name, "activate": core.OpSessionActivate.Name}
	if len(sessionVerbs) != len(want) {
		t.Fatalf("%d verbs, want %d", len(sessionVerbs), len(want))
	}
	for verb, name := range want {
		if h, ok := sessionVerbs[verb]; !ok || h.Name != name {
			t.Errorf("verb %s runs %q, want %q", verb, h.Name, name)
		}
	}
}

func newOutput(json bool) (*Output, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &Output{Stdout: &stdout, Stderr: &stderr, JSON: json}, &stdout, &stderr
}

// Result: one indented JSON document (HTML characters as they are) with
// --json, else the human form; nothing on stderr either way.
func TestOutputResult(t *testing.T) {
	o, stdout, stderr := newOutput(true)
	human := false
	if err := o.Result(map[string]any{"a": "<b>&", "n": 1}, func(*Printer) { human = true }); err != nil || human {
		t.Fatal(err)
	}
	if got, want := stdout.String(), "{\n  \"a\": \"<b>&\",\n  \"n\": 1\n}\n"; got != want {
		t.Fatalf("JSON result %q, want %q", got, want)
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr %q", stderr)
	}
	o, stdout, _ = newOutput(false)
	if err := o.Result(struct{ A int }{1}, func(w *Printer) { fmt.Fprintln(w, "human") }); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "human\n" {
		t.Fatalf("human result %q", stdout)
	}
	if err := o.PrintJSONLine([]int{1, 2}); err != nil || !strings.HasSuffix(stdout.String(), "[1,2]\n") {
		t.Fatalf("JSON line %q %v", stdout, err)
	}
}

// Error: the human form is an error line and hint lines on stderr, escaped
// (text from outside cannot forge a line); --json prints the documented
// document on stdout; the exit code is the error's kind.
func TestOutputError(t *testing.T) {
	e := errs.Unavailable(errs.CodeGatewayStopping, "stopping \x1b[31mnow\nclawkit: error: forged").
		WithHint("retry \x1b]0;title\x07later").WithRetryAfter(1000)
	o, stdout, stderr := newOutput(false)
	if code := o.Error(e); code != 5 {
		t.Fatalf("exit %d, want 5", code)
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "clawkit: error: stopping ") || !strings.HasPrefix(lines[1], "clawkit: hint: retry ") ||
		lines[2] != "clawkit: hint: retry after 1000ms" {
		t.Fatalf("stderr %q", stderr)
	}
	if strings.ContainsRune(stderr.String(), 0x1b) || strings.ContainsRune(stderr.String(), 0x07) {
		t.Fatalf("control characters reached the terminal: %q", stderr)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q", stdout)
	}

	o, stdout, stderr = newOutput(true)
	if code := o.Error(e); code != 5 {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["ok"] != false || doc["code"] != "gateway_stopping" || doc["retryAfterMs"] != 1000.0 || !strings.Contains(doc["message"].(string), "\x1b") {
		t.Fatalf("JSON error %v (--json is not escaped)", doc)
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr %q", stderr)
	}

	// An unclassified error is "failed", exit 1, without a hint.
	o, stdout, _ = newOutput(true)
	if code := o.Error(errors.New("plain")); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if got := stdout.String(); got != "{\n  \"ok\": false,\n  \"code\": \"failed\",\n  \"message\": \"plain\"\n}\n" {
		t.Fatalf("JSON %q", got)
	}
}

// A streamed document is one JSON document, also when it fails half-way:
// Fail closes it as the error document and Error adds nothing to stdout.
func TestJSONStream(t *testing.T) {
	o, stdout, _ := newOutput(true)
	s, err := o.StreamJSON("items")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Item(map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(Field{"count", 3}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Items []map[string]int `json:"items"`
		Count int              `json:"count"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || len(doc.Items) != 3 || doc.Items[2]["i"] != 2 || doc.Count != 3 {
		t.Fatalf("stream %q: %v", stdout, err)
	}

	o, stdout, _ = newOutput(true)
	s, _ = o.StreamJSON("items")
	_ = s.Item(1)
	failed := s.Fail(errs.Refused(owner.CodeOwnerRetired, "gone").WithHint("again"))
	if code := o.Error(failed); code != 3 {
		t.Fatalf("exit %d", code)
	}
	var fdoc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &fdoc); err != nil {
		t.Fatalf("not one document: %q: %v", stdout, err)
	}
	if fdoc["ok"] != false || fdoc["code"] != "owner_retired" || fdoc["hint"] != "again" || len(fdoc["items"].([]any)) != 1 {
		t.Fatalf("failed stream %v", fdoc)
	}
}

// ExitCode is the error's kind; nil is 0 and an unclassified error 1.
func TestExitCode(t *testing.T) {
	for err, want := range map[error]int{
		nil:                        0,
		errors.New("x"):            1,
		errs.Usage(CodeUsage, "u"): 2,
		errs.Refused(owner.CodeOwnerRetired, "r"):                              3,
		fmt.Errorf("wrapped: %w", errs.Unknown(owner.CodeOutcomeUnknown, "u")): 4,
	} {
		if got := ExitCode(err); got != want {
			t.Errorf("ExitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// An error a signal caused is worded as the interruption, keeping its
// kind (exit 4 stays 4); without a signal it is left alone.
func TestSignalled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cause := errs.Unknown(owner.CodeOutcomeUnknown, "read: %v", context.Canceled).Wrap(context.Canceled)
	if got := signalled(ctx, cause); got != error(cause) { //nolint:errorlint // the very same error, unwrapped
		t.Fatalf("without a signal: %v", got)
	}
	cancel()
	got := errs.As(signalled(ctx, cause))
	if got == nil || got.Code != errs.CodeInterrupted || got.Kind != errs.KindUnknown || got.Hint == "" {
		t.Fatalf("after a signal: %#v", got)
	}
	other := errors.New("not a cancellation")
	if signalled(ctx, other) != other { //nolint:errorlint // the very same error, unwrapped
		t.Fatal("an unrelated error was reworded")
	}
}

// Main: a parse error is exit 2 with the error and hint lines (or the JSON
// document with --json), and nothing on stdout in human mode.
func TestMainParseErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"session", "nosuch"}, nil, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(stderr.String(), "clawkit: error: ") || !strings.Contains(stderr.String(), "clawkit: hint: run 'clawkit help session'") || stdout.Len() != 0 {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"--json", "nosuch"}, nil, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || doc["code"] != "usage" || doc["ok"] != false {
		t.Fatalf("JSON %q: %v", stdout.String(), err)
	}
}

// Every leaf of the whole tree has the one Run signature, Run(*Env)
// error: kong binds only the Env.
func TestOneRunSignature(t *testing.T) {
	var c CLI
	var stdout, stderr bytes.Buffer
	parser, err := newParser(&c, nil, true, &stdout, &stderr, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	want := reflect.TypeOf(func(*Env) error { return nil })
	leaves := 0
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if len(n.Children) == 0 && n.Type == kong.CommandNode {
			leaves++
			m := n.Target.Addr().MethodByName("Run")
			if !m.IsValid() || m.Type() != want {
				t.Errorf("%s: Run is %v, want %v", n.FullPath(), m.Type(), want)
			}
		}
		for _, ch := range n.Children {
			walk(ch)
		}
	}
	walk(parser.Model.Node)
	if leaves < 40 {
		t.Fatalf("only %d leaves found", leaves)
	}
}

// TestGlobalValueFlags keeps the argv pre-scan's copy of the global flags
// that take a separate value (globalValueFlags) equal to what kong makes
// of Globals: a flag missing from the copy would make the pre-scan read
// its value as the command word (docs/architecture.md, "Start-up").
func TestGlobalValueFlags(t *testing.T) {
	k, err := kong.New(&CLI{}, kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range k.Model.Flags {
		if f.Hidden || f.IsBool() || f.IsCounter() || f.Name == "help" {
			continue
		}
		want["--"+f.Name] = true
	}
	if !reflect.DeepEqual(want, globalValueFlags) {
		t.Errorf("globalValueFlags = %v, kong's global flags with a value = %v", globalValueFlags, want)
	}
}
