package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// The MCP project's conformance suite (docs/conformance.md, "MCP
// conformance suite"): every client scenario of both pinned releases run
// against clawkit's HTTP client (through conformance/suiteclient) and, on
// the same run, against the Go SDK's own conformance client; every server
// scenario against `clawkit mcp proxy --listen` in front of the Go SDK's
// everything-server over stdio and, beside it, against that server on its
// own HTTP. Each result must be what mcpsuite-baseline.txt says.

// suiteRelease is one pinned release of the suite under
// peers/mcp-conformance/node_modules.
type suiteRelease struct{ version, dir string }

var suiteReleases = []suiteRelease{
	{"0.1.16", "conformance-0-1"},
	{"0.2.0-alpha.11", "conformance-0-2"},
}

// The runners: who is tested.
const (
	runClawkitClient = "clawkit-client" // clawkit mcp session --url, via suiteclient
	runGoSDKClient   = "gosdk-client"   // the Go SDK's everything-client
	runClawkitProxy  = "clawkit-proxy"  // clawkit mcp proxy --listen -- everything-server (stdio)
	runGoSDKServer   = "gosdk-server"   // everything-server -http (its own HTTP)
)

var suiteRunners = []string{runClawkitClient, runGoSDKClient, runClawkitProxy, runGoSDKServer}

// suiteOutcome is one scenario's result for one runner and release.
type suiteOutcome struct {
	pass   bool
	detail string // the failing checks, or why the run failed
}

type suiteKey struct{ runner, release, scenario string }

func (k suiteKey) String() string { return k.runner + " " + k.release + " " + k.scenario }

// suiteNeed is needPeer for the suite's own folder.
func suiteNeed(t *testing.T, r suiteRelease) string {
	t.Helper()
	p := filepath.Join(repoRoot(), "peers", "mcp-conformance", "node_modules", r.dir, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP conformance suite %s is missing under peers/mcp-conformance; .ci/run installs it (make peers)", r.version)
		}
		t.Skipf("the MCP conformance suite %s is not installed (make peers)", r.version)
	}
	return p
}

// suiteBuild builds clawkit, the adapter and the Go SDK's conformance
// client and server (inside the go-sdk module this one requires, at the
// version go.mod pins) into dir.
func suiteBuild(t *testing.T, dir string) (clawkit, adapter, goClient, goServer string) {
	t.Helper()
	build := func(wd, out, pkg string) string {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = wd
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		return out
	}
	root := repoRoot()
	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil || len(bytes.TrimSpace(modDir)) == 0 {
		t.Fatalf("go list -m github.com/modelcontextprotocol/go-sdk: %v", err)
	}
	sdk := string(bytes.TrimSpace(modDir))
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i, b := range []struct{ wd, name, pkg string }{
		{root, "clawkit", "./cmd/clawkit"},
		{root, "suiteclient", "./conformance/suiteclient"},
		{sdk, "gosdk-everything-client", "./conformance/everything-client"},
		{sdk, "gosdk-everything-server", "./conformance/everything-server"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = build(b.wd, filepath.Join(dir, b.name), b.pkg)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return outs[0], outs[1], outs[2], outs[3]
}

var listLine = regexp.MustCompile(`^\s+- (\S+)`)

// suiteScenarios asks a release for its client and server scenario names
// (`conformance list`).
func suiteScenarios(t *testing.T, node, entry string) (client, server []string) {
	t.Helper()
	out, err := exec.Command(node, entry, "list").Output()
	if err != nil {
		t.Fatalf("%s list: %v", entry, err)
	}
	var section string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case line != "" && !strings.HasPrefix(line, " "):
			section = ""
		}
		if m := listLine.FindStringSubmatch(line); m != nil {
			switch section {
			case "server":
				server = append(server, m[1])
			case "client":
				client = append(client, m[1])
			}
		}
	}
	if len(client) == 0 || len(server) == 0 {
		t.Fatalf("%s list named no scenarios:\n%s", entry, out)
	}
	return client, server
}

// failingChecks reads the checks.json files under dir and names every
// check that is not a success.
func failingChecks(dir string) string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if json.Unmarshal(b, &checks) != nil {
			return nil
		}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				msg := c.ErrorMessage
				if len(msg) > 200 {
					msg = msg[:200] + "…"
				}
				out = append(out, c.Status+" "+c.ID+": "+msg)
			}
		}
		return nil
	})
	return strings.Join(out, "; ")
}

// runClientScenario runs one client scenario against CMD; the suite's exit
// status is the verdict (0: every check passed, the client exited 0 in
// time).
func runClientScenario(node, entry, command, scenario, outDir string, env []string) suiteOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return suiteOutcome{detail: err.Error()}
	}
	cmd := exec.CommandContext(ctx, node, entry, "client", "--command", command, "--scenario", scenario, "--timeout", "60000", "-o", outDir)
	cmd.Env = append(os.Environ(), env...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	err := cmd.Run()
	if err == nil {
		return suiteOutcome{pass: true}
	}
	detail := failingChecks(outDir)
	if detail == "" {
		tail := logs.String()
		if len(tail) > 600 {
			tail = "…" + tail[len(tail)-600:]
		}
		detail = fmt.Sprintf("%v: %s", err, tail)
	}
	return suiteOutcome{detail: detail}
}

var summaryLine = regexp.MustCompile(`^([✓✗]) (\S+): `)

// singlePassed is the verdict line of a server run of one scenario (it
// prints no summary line): every check passed.
var singlePassed = regexp.MustCompile(`(?m)^Passed: (\d+)/(\d+), 0 failed`)

// runServerScenario runs one server scenario against url (a rerun of one
// whose verdict differed from the baseline).
func runServerScenario(node, entry, url, scenario, outDir string) suiteOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, entry, "server", "--url", url, "--scenario", scenario, "-o", outDir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	err := cmd.Run()
	if m := singlePassed.FindStringSubmatch(logs.String()); err == nil && m != nil && m[1] == m[2] {
		return suiteOutcome{pass: true}
	}
	detail := ""
	if dirs, _ := filepath.Glob(filepath.Join(outDir, "server-"+scenario+"-*")); len(dirs) > 0 {
		detail = failingChecks(dirs[0])
	}
	if detail == "" {
		detail = fmt.Sprintf("%v: %s", err, tail(logs.String(), 600))
	}
	return suiteOutcome{detail: detail}
}

// runServerScenarios runs every server scenario of a release (--suite all)
// against url, one scenario after another as the suite does; the verdict
// per scenario is the suite's own summary line.
func runServerScenarios(node, entry, url, outDir string) (map[string]suiteOutcome, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, entry, "server", "--url", url, "--suite", "all", "-o", outDir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	_ = cmd.Run() // exit 1 when any scenario fails: the summary says which
	res := map[string]suiteOutcome{}
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	for sc.Scan() {
		if m := summaryLine.FindStringSubmatch(sc.Text()); m != nil {
			o := suiteOutcome{pass: m[1] == "✓"}
			if !o.pass {
				o.detail = sc.Text()
				if dirs, _ := filepath.Glob(filepath.Join(outDir, "server-"+m[2]+"-*")); len(dirs) > 0 {
					if d := failingChecks(dirs[0]); d != "" {
						o.detail = d
					}
				}
			}
			res[m[2]] = o
		}
	}
	return res, logs.String()
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startProxy runs `clawkit mcp proxy --listen 127.0.0.1:0 --no-auth --
// everything-server` with its default flags and returns its URL; stop
// sends SIGTERM (the documented drain) and waits for the exit.
func startProxy(t *testing.T, clawkit, server string) (url string, stop func() string) {
	t.Helper()
	cmd := exec.Command(clawkit, "mcp", "proxy", "--listen", "127.0.0.1:0", "--no-auth", "--", server)
	cmd.Env = append(os.Environ(), "CLAWKIT_HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	urlCh := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			mu.Unlock()
			if i := strings.Index(line, "listening on "); i >= 0 {
				f := strings.Fields(line[i+len("listening on "):])
				if len(f) > 0 {
					select {
					case urlCh <- f[0]:
					default:
					}
				}
			}
		}
	}()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
			if err := cmd.Wait(); err != nil {
				t.Errorf("the proxy's drain: %v", err)
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing should be left; never leak
		}
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
	t.Cleanup(func() { stop() })
	select {
	case url = <-urlCh:
	case <-done:
		t.Fatalf("the proxy exited before listening:\n%s", stop())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the proxy did not listen:\n%s", stop())
	}
	return url, stop
}

// startGoServer runs the everything-server on its own HTTP.
func startGoServer(t *testing.T, server string) string {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(server, "-http", addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			fsx.CloseRead(c)
			break
		}
		if i > 1200 {
			t.Fatalf("everything-server -http %s did not listen: %s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// suiteJobs bounds how many client scenarios run at once (each is a Node
// process and a client process): CLAWKIT_MCPSUITE_JOBS, default 4.
func suiteJobs() int {
	if n, err := strconv.Atoi(os.Getenv("CLAWKIT_MCPSUITE_JOBS")); err == nil && n > 0 {
		return n
	}
	return 4
}

func TestMCPSuite(t *testing.T) {
	node := node24(t)
	entries := map[string]string{}
	for _, r := range suiteReleases {
		entries[r.version] = suiteNeed(t, r)
	}
	baseline := readSuiteBaseline(t)
	bin := t.TempDir()
	clawkit, adapter, goClient, goServer := suiteBuild(t, bin)
	out := t.TempDir()
	start := time.Now()

	type job struct {
		key     suiteKey
		command string
	}
	var jobs []job
	names := map[string][]string{} // "client RELEASE" / "server RELEASE" -> scenarios
	for _, r := range suiteReleases {
		client, server := suiteScenarios(t, node, entries[r.version])
		names["client "+r.version], names["server "+r.version] = client, server
		for _, s := range client {
			// An auth scenario is clawkit as a user logs in: `mcp login`,
			// then `mcp call --url` finding the login by itself
			// (scripts/conformance-auth-client.sh, docs/mcp.md "Login").
			command := adapter
			if strings.HasPrefix(s, "auth/") {
				command = "sh " + filepath.Join(repoRoot(), "scripts", "conformance-auth-client.sh")
			}
			jobs = append(jobs, job{suiteKey{runClawkitClient, r.version, s}, command},
				job{suiteKey{runGoSDKClient, r.version, s}, goClient})
		}
	}
	env := []string{"CLAWKIT=" + clawkit, "CLAWKIT_HOME=" + t.TempDir(), "NODE=" + node}

	results := map[suiteKey]suiteOutcome{}
	var mu sync.Mutex
	runJob := func(j job, attempt int) suiteOutcome {
		dir := filepath.Join(out, j.key.runner, j.key.release, strings.ReplaceAll(j.key.scenario, "/", "_"), strconv.Itoa(attempt))
		return runClientScenario(node, entries[j.key.release], j.command, j.key.scenario, dir, env)
	}

	// The server side, one release after the other (the suite runs its
	// server scenarios in sequence), beside the client pool: a fresh proxy
	// per release, with its default flags.
	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		for _, r := range suiteReleases {
			url, stop := startProxy(t, clawkit, goServer)
			res, logs := runServerScenarios(node, entries[r.version], url, filepath.Join(out, runClawkitProxy, r.version))
			proxyLog := stop()
			gres, glogs := runServerScenarios(node, entries[r.version], startGoServer(t, goServer), filepath.Join(out, runGoSDKServer, r.version))
			mu.Lock()
			for _, s := range names["server "+r.version] {
				o, ok := res[s]
				if !ok {
					o = suiteOutcome{detail: "no summary line; the suite said:\n" + tail(logs, 1500) + "\nthe proxy said:\n" + tail(proxyLog, 1500)}
				}
				results[suiteKey{runClawkitProxy, r.version, s}] = o
				g, ok := gres[s]
				if !ok {
					g = suiteOutcome{detail: "no summary line; the suite said:\n" + tail(glogs, 1500)}
				}
				results[suiteKey{runGoSDKServer, r.version, s}] = g
			}
			mu.Unlock()
		}
	}()

	work := make(chan job)
	var wg sync.WaitGroup
	for range suiteJobs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				o := runJob(j, 0)
				mu.Lock()
				results[j.key] = o
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	<-serverDone
	firstPass := time.Since(start)

	// A client scenario whose result differs from the baseline runs again,
	// alone, up to twice: the suite times some checks (sse-retry's
	// reconnection delay) and a loaded machine can make a client late. The
	// verdict that stands is the last one; any rerun is logged.
	// CLAWKIT_MCPSUITE_RERUNS changes the count (0: none, to write a first
	// baseline quickly).
	reruns := 2
	if n, err := strconv.Atoi(os.Getenv("CLAWKIT_MCPSUITE_RERUNS")); err == nil && n >= 0 {
		reruns = n
	}
	for _, j := range jobs {
		for attempt := 1; attempt <= reruns && results[j.key].pass != !hasKey(baseline, j.key); attempt++ {
			t.Logf("rerun %d of %s (was: pass=%v %s)", attempt, j.key, results[j.key].pass, results[j.key].detail)
			results[j.key] = runJob(j, attempt)
		}
	}
	// The same for a server scenario, alone against a fresh server: the
	// suite times some server checks too, and a loaded machine can make the
	// proxy or the everything-server late.
	for _, r := range suiteReleases {
		for _, s := range names["server "+r.version] {
			for _, runner := range []string{runClawkitProxy, runGoSDKServer} {
				k := suiteKey{runner, r.version, s}
				for attempt := 1; attempt <= reruns && results[k].pass != !hasKey(baseline, k); attempt++ {
					t.Logf("rerun %d of %s (was: pass=%v %s)", attempt, k, results[k].pass, results[k].detail)
					dir := filepath.Join(out, runner, r.version, "rerun-"+strconv.Itoa(attempt))
					if runner == runClawkitProxy {
						url, stop := startProxy(t, clawkit, goServer)
						results[k] = runServerScenario(node, entries[r.version], url, s, dir)
						stop()
					} else {
						results[k] = runServerScenario(node, entries[r.version], startGoServer(t, goServer), s, dir)
					}
				}
			}
		}
	}

	// Compare with the baseline, both ways.
	var keys []suiteKey
	for k := range results {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	// The expected failures first, the differences last: a log cut to its
	// tail (CI's) still shows what failed.
	for _, k := range keys {
		if o := results[k]; !o.pass && hasKey(baseline, k) {
			t.Logf("expected failure %s (%s): %s", k, baseline[k], o.detail)
		}
	}
	for _, k := range keys {
		o := results[k]
		reason, expectFail := baseline[k]
		switch {
		case o.pass && expectFail:
			t.Errorf("%s passes now; take it out of conformance/mcpsuite-baseline.txt (it said: %s)", k, reason)
		case !o.pass && !expectFail:
			t.Errorf("%s fails and conformance/mcpsuite-baseline.txt expects a pass: %s", k, o.detail)
		}
	}
	for k := range baseline {
		if _, ok := results[k]; !ok {
			t.Errorf("conformance/mcpsuite-baseline.txt names %s, which no release of the suite runs; remove it", k)
		}
	}
	t.Logf("suite runs took %s (%d client scenario runs, %d at a time, plus the server scenarios)", firstPass.Round(time.Second), len(jobs), suiteJobs())
	if t.Failed() {
		return
	}
	checkSuiteDoc(t, suiteTable(names, baseline))
}

func hasKey(m map[suiteKey]string, k suiteKey) bool { _, ok := m[k]; return ok }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// readSuiteBaseline reads conformance/mcpsuite-baseline.txt: one expected
// failure a line, "RUNNER RELEASE SCENARIO REASON…"; # starts a comment.
// Every entry needs a reason; a runner or release not run is refused.
func readSuiteBaseline(t *testing.T) map[suiteKey]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "conformance", "mcpsuite-baseline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range suiteReleases {
		known[r.version] = true
	}
	m := map[suiteKey]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			t.Fatalf("mcpsuite-baseline.txt:%d: want RUNNER RELEASE SCENARIO REASON, got %q", i+1, line)
		}
		k := suiteKey{f[0], f[1], f[2]}
		if !known[k.release] || !containsString(suiteRunners, k.runner) {
			t.Fatalf("mcpsuite-baseline.txt:%d: unknown runner or release in %q", i+1, line)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("mcpsuite-baseline.txt:%d: %s listed twice", i+1, k)
		}
		m[k] = strings.Join(f[3:], " ")
	}
	return m
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suiteTable renders the pass counts per release and runner from the
// scenario lists and the baseline (which the run has just confirmed).
func suiteTable(names map[string][]string, baseline map[suiteKey]string) string {
	var b strings.Builder
	b.WriteString("| release | side | scenarios | clawkit | Go SDK v1.8.0 |\n|---|---|---|---|---|\n")
	count := func(runner, release string, list []string) int {
		n := 0
		for _, s := range list {
			if !hasKey(baseline, suiteKey{runner, release, s}) {
				n++
			}
		}
		return n
	}
	for _, r := range suiteReleases {
		c, s := names["client "+r.version], names["server "+r.version]
		fmt.Fprintf(&b, "| %s | client | %d | %d (`mcp session --url`) | %d (everything-client) |\n", r.version, len(c),
			count(runClawkitClient, r.version, c), count(runGoSDKClient, r.version, c))
		fmt.Fprintf(&b, "| %s | server | %d | %d (`mcp proxy --listen`, default flags, in front of everything-server over stdio) | %d (everything-server on its own HTTP) |\n", r.version, len(s),
			count(runClawkitProxy, r.version, s), count(runGoSDKServer, r.version, s))
	}
	return b.String()
}

const (
	suiteDocBegin = "<!-- mcpsuite table: generated by TestMCPSuite (CLAWKIT_UPDATE_GOLDEN=1 rewrites it) -->\n"
	suiteDocEnd   = "<!-- end mcpsuite table -->\n"
)

// checkSuiteDoc keeps the table in docs/conformance.md equal to the run's;
// with CLAWKIT_UPDATE_GOLDEN=1 it rewrites it.
func checkSuiteDoc(t *testing.T, table string) {
	t.Helper()
	p := filepath.Join(repoRoot(), "docs", "conformance.md")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, suiteDocBegin)
	j := strings.Index(doc, suiteDocEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/conformance.md has no mcpsuite table markers")
	}
	current := doc[i+len(suiteDocBegin) : j]
	if current == table {
		return
	}
	if os.Getenv("CLAWKIT_UPDATE_GOLDEN") == "1" {
		if err := fsx.WriteFile(p, []byte(doc[:i+len(suiteDocBegin)]+table+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/conformance.md's mcpsuite table is stale (CLAWKIT_UPDATE_GOLDEN=1 go test ./conformance -run TestMCPSuite rewrites it); want:\n%s", table)
}
