package testscript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

// TestChaos is the standing kill -9 campaign (issue: no lost writes, nothing
// half-published). Each trial starts a real clawkit process doing one
// mutating job, kills it with SIGKILL at a random point of its run (a delay
// drawn uniformly from 0 to 1.2× the job's measured uninterrupted time),
// then checks what a user relies on:
//
//   - the final path is absent or complete (a published manifest inspects,
//     an installed runtime verifies, a skill file is the old or the new
//     content whole);
//   - the next run succeeds without manual clean-up;
//   - an exit-0 write is present (the process may finish before the kill);
//   - no logical research job was created twice at the (fake) provider.
//
// `make test` runs CLAWKIT_CHAOS_TRIALS=30 (the default); `make chaos`
// (scripts/chaos.sh) runs 200 or more and prints the table.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos campaign skipped in -short mode")
	}
	trials := 30
	if s := os.Getenv("CLAWKIT_CHAOS_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CLAWKIT_CHAOS_TRIALS=%q", s)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CLAWKIT_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("chaos: %d trials, seed %d (CLAWKIT_CHAOS_SEED reproduces the draw)", trials, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	c := newChaos(t)
	scenarios := []chaosScenario{
		{"config set", c.configTrial},
		{"auth add", c.authTrial},
		{"skill write", c.skillTrial},
		{"research start", c.researchTrial},
		{"artifacts export", c.exportTrial},
		{"crabbox install", c.installTrial},
		{"crabbox replace", c.replaceTrial},
		{"crabbox lock", c.lockTrial},
		{"crabbox modes", c.modesTrial},
	}
	// CLAWKIT_CHAOS_SCENARIOS=crabbox runs only the scenarios whose name
	// contains it (a longer campaign for one area).
	if only := os.Getenv("CLAWKIT_CHAOS_SCENARIOS"); only != "" {
		var keep []chaosScenario
		for _, s := range scenarios {
			if strings.Contains(s.name, only) {
				keep = append(keep, s)
			}
		}
		scenarios = keep
	}
	type row struct{ trials, killed, finished, violations int }
	table := map[string]*row{}
	for _, s := range scenarios {
		table[s.name] = &row{}
	}
	for i := range trials {
		s := scenarios[i%len(scenarios)]
		r := table[s.name]
		r.trials++
		killed, problems := s.run(i, rng)
		if killed {
			r.killed++
		} else {
			r.finished++
		}
		// Nothing of a killed write may exist outside the home and the
		// folders the command named: every child's $TMPDIR stays empty.
		if left, _ := os.ReadDir(c.tmp); len(left) > 0 {
			for _, e := range left {
				problems = append(problems, "left in $TMPDIR: "+e.Name())
				os.RemoveAll(filepath.Join(c.tmp, e.Name()))
			}
		}
		for _, p := range problems {
			r.violations++
			t.Errorf("trial %d (%s): %s", i, s.name, p)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %7s %7s %9s %10s\n", "scenario", "trials", "killed", "finished", "violations")
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	tot := row{}
	for _, n := range names {
		r := table[n]
		fmt.Fprintf(&b, "%-18s %7d %7d %9d %10d\n", n, r.trials, r.killed, r.finished, r.violations)
		tot.trials += r.trials
		tot.killed += r.killed
		tot.finished += r.finished
		tot.violations += r.violations
	}
	fmt.Fprintf(&b, "%-18s %7d %7d %9d %10d\n", "total", tot.trials, tot.killed, tot.finished, tot.violations)
	t.Logf("chaos table:\n%s", b.String())
	if out := os.Getenv("CLAWKIT_CHAOS_TABLE"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	}
}

type chaosScenario struct {
	name string
	run  func(i int, rng *rand.Rand) (killed bool, problems []string)
}

type chaos struct {
	t        *testing.T
	dir      string
	tmp      string // every child's $TMPDIR
	home     string
	fake     *fakeapi.Listener
	fakeLog  string
	sample   string
	manifest string
	// bigManifest is an export of a few thousand files, whose install
	// runs long enough on the parallel writers for kills to land inside.
	bigManifest string
	// modesManifest is an export whose archive asks for world-writable,
	// sticky and set-id modes (crabboxtest.ModesArchive).
	modesManifest string
	installs      int // install trials so far (they alternate exports)
	skillMD       [2][]byte
	baseline      map[string]time.Duration
}

func newChaos(t *testing.T) *chaos {
	dir := t.TempDir()
	c := &chaos{t: t, dir: dir, tmp: filepath.Join(dir, "tmp"), home: filepath.Join(dir, "home"), baseline: map[string]time.Duration{}}
	if err := os.Mkdir(c.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	c.fakeLog = filepath.Join(dir, "fakegoogle.log")
	l, err := fakeapi.Start(c.fakeLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	c.fake = l

	// Research activation and a plugin with a skills folder.
	c.must(nil, "config", "set", "plugins.entries.google.config.research", `{"enabled":true,"profileId":"google:default"}`)
	c.must([]string{"CHAOS_KEY=chaos-key"}, "auth", "add", "google:default", "--provider", "google", "--api-key-env", "CHAOS_KEY")
	plugin := filepath.Join(dir, "plugin")
	os.MkdirAll(plugin, 0o755)
	os.WriteFile(filepath.Join(plugin, "openclaw.plugin.json"), []byte(`{"id":"chaos","agentSkillsDir":"skills"}`), 0o644)
	c.must(nil, "config", "set", "plugins.entries.chaos.path", plugin)
	for i := range c.skillMD {
		// Two versions of very different sizes, so a torn write would show.
		body := strings.Repeat(fmt.Sprintf("Version %d of the chaos skill body.\n", i), 1+i*4000)
		c.skillMD[i] = []byte("---\nname: chaos\ndescription: A skill rewritten while clawkit is killed.\n---\n" + body)
	}

	// A sample installation and one export of it for the install trials.
	c.sample = filepath.Join(dir, "sample")
	if out, err := exec.Command("cp", "-r", filepath.Join(repoRoot(), "artifacts", "sample"), c.sample).CombinedOutput(); err != nil {
		t.Fatalf("copy sample: %v %s", err, out)
	}
	c.must(nil, "runtime-artifacts", "export", "--package-root", c.pkgRoot(), "--output", filepath.Join(dir, "export"))
	c.manifest = filepath.Join(dir, "export", "manifest.json")
	big, err := crabboxtest.Installation(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		p := filepath.Join(big, "dist", "chunks", fmt.Sprintf("c%02d", i/100), fmt.Sprintf("chunk-%05d.js", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, archivetest.Text(uint64(7000+i), 4<<10+i%8192), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.must(nil, "runtime-artifacts", "export", "--package-root", big, "--output", filepath.Join(dir, "bigexport"))
	c.bigManifest = filepath.Join(dir, "bigexport", "manifest.json")
	if c.modesManifest, err = crabboxtest.HandExport(filepath.Join(dir, "modesexport"), crabboxtest.ModesArchive()); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *chaos) pkgRoot() string { return filepath.Join(c.sample, "node_modules", "openclaw") }

func (c *chaos) cmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("clawkit", append([]string{"--home", c.home}, args...)...)
	cmd.Env = append(os.Environ(), "CLAWKIT_GOOGLE_BASE_URL="+c.fake.URL, "CLAWKIT_RESEARCH_TIME_SCALE=1000", "TMPDIR="+c.tmp)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs clawkit to completion and returns its exit code and output.
func (c *chaos) run(env []string, args ...string) (int, string) {
	cmd := c.cmd(env, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return exitCode(cmd.Run()), out.String()
}

func (c *chaos) must(env []string, args ...string) string {
	code, out := c.run(env, args...)
	if code != 0 {
		c.t.Fatalf("clawkit %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// killAt starts the command, kills its process group with SIGKILL after a
// random part of the scenario's baseline, and reports whether the kill
// landed while it ran (else it finished first: exit code returned).
func (c *chaos) killAt(name string, rng *rand.Rand, env []string, args ...string) (killed bool, code int) {
	base, ok := c.baseline[name]
	if !ok {
		start := time.Now()
		cmd := c.cmd(env, args...)
		code := exitCode(cmd.Run())
		c.baseline[name] = time.Since(start)
		return false, code // the first run measures the baseline
	}
	cmd := c.cmd(env, args...)
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	delay := time.Duration(rng.Float64() * 1.2 * float64(base))
	select {
	case err := <-done:
		return false, exitCode(err)
	case <-time.After(delay):
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err := <-done
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true, -1
		}
	}
	return false, exitCode(err)
}

func (c *chaos) configTrial(i int, rng *rand.Rand) (bool, []string) {
	key := fmt.Sprintf("chaos.k%d", i)
	killed, code := c.killAt("config", rng, nil, "config", "set", key, strconv.Itoa(i))
	var p []string
	if rc, out := c.run(nil, "config", "get", "--json"); rc != 0 {
		p = append(p, "config.json unreadable after the kill: "+out)
	}
	_, got := c.run(nil, "config", "get", key)
	if !killed && code == 0 && strings.TrimSpace(got) != strconv.Itoa(i) {
		p = append(p, fmt.Sprintf("exit-0 write of %s lost (got %q)", key, got))
	}
	if rc, out := c.run(nil, "config", "set", key, strconv.Itoa(i)); rc != 0 {
		p = append(p, "next run failed: "+out)
	}
	return killed, p
}

func (c *chaos) authTrial(i int, rng *rand.Rand) (bool, []string) {
	id := fmt.Sprintf("chaos%d", i)
	env := []string{"CHAOS_KEY=k-" + id}
	killed, code := c.killAt("auth", rng, env, "auth", "add", id, "--provider", "google", "--api-key-env", "CHAOS_KEY")
	var p []string
	rc, out := c.run(nil, "auth", "list", "--json")
	if rc != 0 {
		p = append(p, "credentials unreadable after the kill: "+out)
	}
	present := strings.Contains(out, `"`+id+`"`)
	if !killed && code == 0 && !present {
		p = append(p, "exit-0 profile "+id+" lost")
	}
	if !present {
		if rc, out := c.run(env, "auth", "add", id, "--provider", "google", "--api-key-env", "CHAOS_KEY"); rc != 0 {
			p = append(p, "next run failed: "+out)
		}
	}
	return killed, p
}

func (c *chaos) skillTrial(i int, rng *rand.Rand) (bool, []string) {
	src := filepath.Join(c.dir, "skill-src.md")
	next := c.skillMD[i%2]
	if err := os.WriteFile(src, next, 0o644); err != nil {
		c.t.Fatal(err)
	}
	killed, code := c.killAt("skill", rng, nil, "skill", "write", "chaos", "SKILL.md", "--plugin", "chaos", "--from", src)
	var p []string
	file := filepath.Join(c.home, "agents", "main", "skills", "chaos", "SKILL.md")
	got, err := os.ReadFile(file)
	switch {
	case err != nil && !os.IsNotExist(err):
		p = append(p, fmt.Sprintf("SKILL.md unreadable: %v", err))
	case err == nil && !bytes.Equal(got, c.skillMD[0]) && !bytes.Equal(got, c.skillMD[1]):
		p = append(p, fmt.Sprintf("SKILL.md is neither version whole (%d bytes)", len(got)))
	case !killed && code == 0 && !bytes.Equal(got, next):
		p = append(p, "exit-0 skill write lost")
	}
	if rc, out := c.run(nil, "skill", "write", "chaos", "SKILL.md", "--plugin", "chaos", "--from", src); rc != 0 {
		p = append(p, "next run failed: "+out)
	}
	if rc, out := c.run(nil, "skill", "list", "--plugin", "chaos", "--json"); rc != 0 || strings.Contains(out, ".tmp") {
		p = append(p, "skill list not clean after the kill: "+out)
	}
	return killed, p
}

func (c *chaos) researchTrial(i int, rng *rand.Rand) (bool, []string) {
	q := fmt.Sprintf("chaos question %d", i)
	key := fmt.Sprintf("chaos-%d", i)
	killed, _ := c.killAt("research", rng, nil, "research", "start", "--idempotency-key", key, q)
	var p []string
	if rc, out := c.run(nil, "research", "recover"); rc != 0 && rc != 4 {
		p = append(p, fmt.Sprintf("recover exit %d: %s", rc, out))
	}
	// The same key again: the recorded job (or an honest "unknown"), never
	// a second create.
	if rc, out := c.run(nil, "research", "start", "--idempotency-key", key, q); rc != 0 && rc != 4 {
		p = append(p, fmt.Sprintf("rerun with the same key: exit %d: %s", rc, out))
	}
	if n := c.creates(q); n > 1 {
		p = append(p, fmt.Sprintf("%d creates for one logical job", n))
	}
	return killed, p
}

// creates counts create requests for question q in the fake's log.
func (c *chaos) creates(q string) int {
	data, _ := os.ReadFile(c.fakeLog)
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e fakeapi.Entry
		if json.Unmarshal(line, &e) != nil || e.Req != "POST /interactions" {
			continue
		}
		if bytes.Contains(e.Body, []byte(strconv.Quote(q)[1:len(strconv.Quote(q))-1])) {
			n++
		}
	}
	return n
}

func (c *chaos) exportTrial(i int, rng *rand.Rand) (bool, []string) {
	out := filepath.Join(c.dir, "exports", strconv.Itoa(i))
	os.MkdirAll(filepath.Dir(out), 0o755)
	killed, code := c.killAt("export", rng, nil, "runtime-artifacts", "export", "--package-root", c.pkgRoot(), "--output", out)
	var p []string
	_, statErr := os.Stat(out)
	switch {
	case statErr == nil:
		if rc, msg := c.run(nil, "runtime-artifacts", "inspect", out); rc != 0 {
			p = append(p, "output present but incomplete: "+msg)
		}
	case !killed && code == 0:
		p = append(p, "exit-0 export has no output")
	default:
		if rc, msg := c.run(nil, "runtime-artifacts", "export", "--package-root", c.pkgRoot(), "--output", out); rc != 0 {
			p = append(p, "next run failed: "+msg)
		}
	}
	return killed, p
}

// installTrial: a fresh install (alternately of the sample export and of
// the many-file one) killed at a random point: the runtime is absent or
// complete (verify --deep passes), never partial.
func (c *chaos) installTrial(i int, rng *rand.Rand) (bool, []string) {
	mp, name := c.manifest, "install"
	if c.installs++; c.installs%2 == 0 {
		mp, name = c.bigManifest, "install-big"
	}
	// A new target each time, so the kill lands in an install, not in the
	// quick check of one already there.
	target := filepath.Join(c.dir, "targets", strconv.Itoa(i))
	defer os.RemoveAll(target)
	killed, code := c.killAt(name, rng, nil, "crabbox", "install", "--manifest", mp, "--target-home", target)
	var p []string
	rc, msg := c.run(nil, "crabbox", "verify", "--deep", "--manifest", mp, "--target-home", target)
	if rc != 0 && !strings.Contains(msg, "not installed") {
		p = append(p, "a runtime is present but does not verify: "+msg)
	}
	if !killed && code == 0 && rc != 0 {
		p = append(p, "exit-0 install does not verify: "+msg)
	}
	if rc, msg := c.run(nil, "crabbox", "install", "--manifest", mp, "--target-home", target); rc != 0 {
		p = append(p, "next run failed: "+msg)
	}
	return killed, p
}

// replaceTrial: the many-file runtime is installed, then one of its files
// is damaged (the "old" install), and the install that replaces it is
// killed at a random point. The final path then holds the old install
// exactly (same files, same bytes) or a complete new one (verify --deep
// passes), never a mix; the next install succeeds.
func (c *chaos) replaceTrial(i int, rng *rand.Rand) (bool, []string) {
	target := filepath.Join(c.dir, "replace", strconv.Itoa(i%4))
	var p []string
	if rc, msg := c.run(nil, "crabbox", "install", "--manifest", c.bigManifest, "--target-home", target); rc != 0 {
		return false, []string{"setup install failed: " + msg}
	}
	runtimes := filepath.Join(target, ".openclaw-worker", "node-runtimes")
	dirs, _ := filepath.Glob(filepath.Join(runtimes, "[0-9a-f]*"))
	if len(dirs) != 1 {
		return false, []string{fmt.Sprintf("setup: runtimes %v", dirs)}
	}
	runtime := dirs[0]
	victim := filepath.Join(runtime, "node_modules", "openclaw", "dist", "chunks", "c07", "chunk-00700.js")
	if err := os.WriteFile(victim, []byte("the old, damaged install\n"), 0o644); err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	old := treeDigest(runtime)
	killed, code := c.killAt("replace", rng, nil, "crabbox", "install", "--manifest", c.bigManifest, "--target-home", target)
	rc, msg := c.run(nil, "crabbox", "verify", "--deep", "--manifest", c.bigManifest, "--target-home", target)
	switch {
	case rc == 0: // complete new install
	case treeDigest(runtime) == old: // the old install, untouched
		if !killed && code == 0 {
			p = append(p, "exit-0 replace left the old install: "+msg)
		}
	default:
		p = append(p, "the final path holds neither the old install nor a complete new one: "+msg)
	}
	if rc, msg := c.run(nil, "crabbox", "install", "--manifest", c.bigManifest, "--target-home", target); rc != 0 {
		p = append(p, "next run failed: "+msg)
	}
	if rc, msg := c.run(nil, "crabbox", "verify", "--deep", "--manifest", c.bigManifest, "--target-home", target); rc != 0 {
		p = append(p, "after the next run: "+msg)
	}
	return killed, p
}

// lockTrial: an install meets a hostile or held per-runtime lock, drawn at
// random: a symlink to a missing file, to an existing one, a FIFO or a
// folder in its place (refused, exit 1, nothing created outside the target
// and nothing changed there); a lock held by another holder and SIGTERM
// at a random point of the wait (exit 1, or death by the signal when it
// lands before the handler is installed); the holder releasing it at a
// random point (the install then succeeds); --lock-wait 1s while held
// (exit 5). Nothing of the install may be left (no staging folder, no
// runtime unless it succeeded), and once the lock is cleared the next
// install succeeds and verifies.
func (c *chaos) lockTrial(i int, rng *rand.Rand) (bool, []string) {
	target := filepath.Join(c.dir, "locks", strconv.Itoa(i))
	outside := filepath.Join(c.dir, "locks-outside", strconv.Itoa(i))
	defer os.RemoveAll(target)
	defer os.RemoveAll(outside)
	in, err := crabbox.LoadInputs(c.manifest, crabbox.Expect{})
	if err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	l, err := crabbox.LayoutFor(target, in.Manifest)
	if err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	os.MkdirAll(l.RuntimesDir, 0o755)
	os.MkdirAll(outside, 0o755)
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("not a lock\n"), 0o644)
	lp := crabbox.LockPath(l)
	install := []string{"crabbox", "install", "--manifest", c.manifest, "--target-home", target}
	var (
		p      []string
		killed bool
		want   = 1
		code   int
		out    string
	)
	kinds := []string{"symlink-missing", "symlink-existing", "fifo", "dir", "held-term", "held-release", "held-timeout"}
	kind := kinds[rng.IntN(len(kinds))]
	switch kind {
	case "symlink-missing":
		err = os.Symlink(filepath.Join(outside, "made"), lp)
	case "symlink-existing":
		err = os.Symlink(victim, lp)
	case "fifo":
		err = syscall.Mkfifo(lp, 0o644)
	case "dir":
		err = os.Mkdir(lp, 0o755)
	}
	if err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	var held *crabbox.RuntimeLock
	if strings.HasPrefix(kind, "held-") {
		if held, err = crabbox.LockRuntime(context.Background(), l, time.Minute); err != nil {
			return false, []string{"setup: " + err.Error()}
		}
		defer held.Unlock()
	}
	delay := time.Duration(rng.Float64() * float64(600*time.Millisecond))
	switch kind {
	case "held-term", "held-release":
		cmd := c.cmd(nil, install...)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			c.t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(delay)
		if kind == "held-term" {
			cmd.Process.Signal(syscall.SIGTERM)
			killed = true
		} else {
			held.Unlock()
			want = 0
		}
		select {
		case err = <-done:
		case <-time.After(2*time.Minute + 10*time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
			p = append(p, fmt.Sprintf("%s: the install did not end (killed after the hang guard)", kind))
		}
		code, out = exitCode(err), buf.String()
		var ee *exec.ExitError
		if kind == "held-term" && errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				code = 1 // the signal landed before the handler was installed
			}
		}
	case "held-timeout":
		want = 5
		code, out = c.run(nil, append(install, "--lock-wait", "1s")...)
	default:
		code, out = c.run(nil, install...)
	}
	if code != want {
		p = append(p, fmt.Sprintf("%s: exit %d, want %d: %s", kind, code, want, out))
	}
	if exists(filepath.Join(outside, "made")) {
		p = append(p, kind+": the install created a file outside the target through the lock's link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "not a lock\n" {
		p = append(p, kind+": the file the lock's link names was changed")
	}
	ents, _ := os.ReadDir(l.RuntimesDir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".staging-") {
			p = append(p, kind+": left "+e.Name())
		}
	}
	if want != 0 && exists(l.RuntimeDir) {
		p = append(p, kind+": a refused install left the runtime folder")
	}
	// Cleared, the next install succeeds and verifies.
	if held != nil {
		held.Unlock()
	}
	if st, err := os.Lstat(lp); err == nil && !st.Mode().IsRegular() {
		os.RemoveAll(lp)
	}
	if rc, msg := c.run(nil, install...); rc != 0 {
		p = append(p, kind+": next run failed: "+msg)
	}
	if rc, msg := c.run(nil, "crabbox", "verify", "--deep", "--manifest", c.manifest, "--target-home", target); rc != 0 {
		p = append(p, kind+": after the next run: "+msg)
	}
	return killed, p
}

// modesTrial: the export whose archive asks for world-writable, sticky and
// set-id modes is installed (nothing above 0755), then a random entry of
// the runtime is given a random other mode. Plain verify and verify --deep
// must fail naming it; the install that follows (killed at a random
// point) must replace the install, never keep it as existing-verified:
// afterwards the runtime verifies deeply, or it is the old one with the
// changed mode still seen. The next install succeeds, and every mode is
// at most 0755 again.
func (c *chaos) modesTrial(i int, rng *rand.Rand) (bool, []string) {
	target := filepath.Join(c.dir, "modes", strconv.Itoa(i))
	defer os.RemoveAll(target)
	install := []string{"crabbox", "install", "--manifest", c.modesManifest, "--target-home", target}
	verify := []string{"crabbox", "verify", "--manifest", c.modesManifest, "--target-home", target}
	deep := append(append([]string{}, verify...), "--deep")
	if rc, msg := c.run(nil, install...); rc != 0 {
		return false, []string{"setup install failed: " + msg}
	}
	dirs, _ := filepath.Glob(filepath.Join(target, ".openclaw-worker", "node-runtimes", "[0-9a-f]*"))
	if len(dirs) != 1 {
		return false, []string{fmt.Sprintf("setup: runtimes %v", dirs)}
	}
	runtime := dirs[0]
	var p []string
	atMost755 := func(when string) {
		filepath.WalkDir(runtime, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			st, err := os.Lstat(path)
			if err == nil && st.Mode()&os.ModeSymlink == 0 && (st.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 || st.Mode().Perm()&^0o755 != 0) {
				p = append(p, fmt.Sprintf("%s: %s has mode %v", when, path, st.Mode()))
			}
			return nil
		})
	}
	atMost755("installed")
	var victims []string
	filepath.WalkDir(runtime, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != runtime && d.Type()&os.ModeSymlink == 0 && !strings.HasPrefix(d.Name(), ".clawkit-runtime") {
			victims = append(victims, path)
		}
		return nil
	})
	victim := victims[rng.IntN(len(victims))]
	st, err := os.Lstat(victim)
	if err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	modes := []os.FileMode{0o777, 0o775, 0o757, 0o711, 0o755 | os.ModeSticky, 0o755 | os.ModeSetgid, 0o755 | os.ModeSetuid, 0o700}
	mode := modes[rng.IntN(len(modes))]
	if mode == st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) {
		mode = 0o777
	}
	if err := os.Chmod(victim, mode); err != nil {
		return false, []string{"setup: " + err.Error()}
	}
	for _, args := range [][]string{verify, deep} {
		if rc, msg := c.run(nil, args...); rc != 1 || !strings.Contains(msg, victim+": mode is ") {
			p = append(p, fmt.Sprintf("%s after chmod %v of %s: exit %d: %s", strings.Join(args[:2], " "), mode, victim, rc, msg))
		}
	}
	killed, code := c.killAt("modes", rng, nil, install...)
	rc, msg := c.run(nil, deep...)
	switch {
	case rc == 0: // replaced
	case strings.Contains(msg, victim+": mode is "): // the old install, still refused
		if !killed && code == 0 {
			p = append(p, "an exit-0 install kept the install with the changed mode: "+msg)
		}
	default:
		p = append(p, "after the install: "+msg)
	}
	if rc, msg := c.run(nil, install...); rc != 0 {
		p = append(p, "next run failed: "+msg)
	}
	if rc, msg := c.run(nil, deep...); rc != 0 {
		p = append(p, "after the next run: "+msg)
	}
	atMost755("reinstalled")
	return killed, p
}

// treeDigest lists every path below root with its type and content digest
// ("" when root is missing).
func treeDigest(root string) string {
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s error %v\n", p, err)
			return nil
		}
		fmt.Fprintf(&b, "%s %v", p, d.Type())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		} else if d.Type()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", t)
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}
