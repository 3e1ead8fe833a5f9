package testscript

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

// hostileKey is the API key of the research cases' profile: a provider
// error that echoes it must never show it (docs/research.md).
const hostileKey = "AIzaHOSTILEkey0123456789abcdefghijklmn"

// startHostileFake starts a fake Interactions API for one case and
// returns the variables that point clawkit at it.
func startHostileFake(t *testing.T, w string) []string {
	l, err := fakeapi.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return []string{"CLAWKIT_GOOGLE_BASE_URL=" + l.URL, "CLAWKIT_RESEARCH_TIME_SCALE=1000", "GEMINI_API_KEY=" + hostileKey}
}

// researchReady gives the home research enabled with profile "g" holding
// hostileKey, plus whatever else.
func researchReady(kv ...string) func(t *testing.T, w string) {
	return func(t *testing.T, w string) {
		write(t, filepath.Join(w, "home", "config.json"), `{"plugins":{"entries":{"google":{"config":{"research":{"enabled":true,"profileId":"g"}}}}}}`)
		write(t, filepath.Join(w, "home", "credentials.json"), `{"version":1,"profiles":{"g":{"provider":"google","kind":"api-key","secret":"`+hostileKey+`","createdAt":"2026-01-01T00:00:00Z"}}}`)
		os.Chmod(filepath.Join(w, "home"), 0o700)
		os.Chmod(filepath.Join(w, "home", "credentials.json"), 0o600)
		files(kv...)(t, w)
	}
}

// snapshotOutsideHome is snapshot without the home (a case whose call
// records its outcome there).
func snapshotOutsideHome(t *testing.T, w string) string {
	var keep []string
	for _, l := range strings.Split(snapshot(t, w), "\n") {
		if !strings.HasPrefix(l, "home/") && !strings.HasPrefix(l, "home ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// round3HostileCases are issue 31's cases in clawkit's own areas: exit 0
// for nothing, secrets and terminal text in research, config bounds,
// hostile home files and input bounds.
func round3HostileCases() []hostileCase {
	rpc := func(name, in, reason string, setup ...func(*testing.T, string)) hostileCase {
		c := hostileCase{name: "r3/rpc-" + name, args: []string{"research", "rpc"}, stdin: in, has: `"reason": "` + reason + `"`}
		if len(setup) > 0 {
			c.setup = setup[0]
		}
		return c
	}
	return []hostileCase{
		// Exit 0 for nothing: a job that ends without a report is exit 1,
		// --out is never written.
		{name: "r3/start-wait-empty-report-out", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:steps-empty q", "--out", "$W/r.md"}, exit: 1, code: "no_report"},
		{name: "r3/start-wait-legacy-outputs", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:legacy-outputs q"}, exit: 1, code: "no_report"},

		// Secrets in messages: a base URL's password or key parameter,
		// the caller's own key echoed by the provider.
		{name: "r3/secret-base-url-userinfo-env", setup: researchReady(), env: []string{"CLAWKIT_GOOGLE_BASE_URL=https://u:hunter2pw@proxy.example/v1"},
			args: []string{"research", "start", "q"}, exit: 1, code: "invalid_config", lacks: "hunter2pw"},
		{name: "r3/secret-base-url-query-env", setup: researchReady(), env: []string{"CLAWKIT_GOOGLE_BASE_URL=https://proxy.example/v1?key=AIzaQueryKey123"},
			args: []string{"research", "start", "q"}, exit: 1, code: "invalid_config", lacks: "AIzaQueryKey123"},
		{name: "r3/secret-base-url-unparsable", setup: researchReady(), env: []string{"CLAWKIT_GOOGLE_BASE_URL=http://u:hunter2pw@h/%zz"},
			args: []string{"research", "start", "q"}, exit: 1, code: "invalid_config", lacks: "hunter2pw"},
		{name: "r3/secret-base-url-config", setup: func(t *testing.T, w string) {
			researchReady()(t, w)
			write(t, filepath.Join(w, "home", "config.json"), `{"plugins":{"entries":{"google":{"config":{"research":{"enabled":true,"profileId":"g","baseUrl":"https://p.example/?api_key=AIzaConfigKey99"}}}}}}`)
		}, env: []string{"CLAWKIT_GOOGLE_BASE_URL="}, args: []string{"research", "start", "q"}, exit: 1, code: "invalid_config", lacks: "AIzaConfigKey99"},
		{name: "r3/secret-create-echoes-key", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "fake:create-400-echo-key"}, exit: 1, code: "not_sent", lacks: hostileKey},
		{name: "r3/secret-create-echoes-key-human", fake: true, homeRecords: true, human: true, setup: researchReady(),
			args: []string{"research", "start", "fake:create-400-echo-key"}, exit: 1, lacks: hostileKey},
		{name: "r3/secret-errors-echo-key", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:echo-key q"}, exit: 0, has: "quota of key REDACTED exhausted", lacks: hostileKey},

		// config.json stays readable: depth and size bounds shared by the
		// writer and the reader.
		{name: "r3/config-set-deep-value", args: []string{"config", "set", "deep.v", strings.Repeat("[", 3000) + strings.Repeat("]", 3000)}, exit: 2, code: "invalid_config_value"},
		{name: "r3/config-set-long-key", args: []string{"config", "set", strings.Repeat("a.", 3000) + "v", "1"}, exit: 2, code: "invalid_config_value"},
		{name: "r3/config-set-deep-existing-home", setup: files("home/config.json", `{"keep":1}`),
			args: []string{"config", "set", "deep.v", strings.Repeat("[", 100) + strings.Repeat("]", 100)}, exit: 2, code: "invalid_config_value"},
		{name: "r3/config-set-grows-over-limit", setup: files("home/config.json", `{"big":"`+strings.Repeat("x", 16<<20-2000)+`"}`),
			args: []string{"config", "set", "more", strings.Repeat("y", 4000)}, exit: 2, code: "invalid_config_value"},
		{name: "r3/config-file-too-deep", setup: files("home/config.json", strings.Repeat(`{"a":`, 3000)+"1"+strings.Repeat("}", 3000)),
			args: []string{"config", "get"}, exit: 1, code: "invalid_config"},
		{name: "r3/config-file-too-deep-session-list", setup: files("home/config.json", strings.Repeat(`{"a":`, 3000)+"1"+strings.Repeat("}", 3000)),
			args: []string{"session", "list"}, exit: 1, code: "invalid_config"},

		// Hostile home files: opened as regular files only, bounded, never
		// blocking, never through a link.
		{name: "r3/home-record-fifo-session-list", setup: files("home/owner.lock", "", "home/gateway.json", "FIFO"),
			args: []string{"session", "list"}, exit: 0},
		{name: "r3/home-record-fifo-config-set", homeRecords: true, setup: files("home/owner.lock", "", "home/gateway.json", "FIFO"),
			args: []string{"config", "set", "a", "1"}, exit: 0},
		{name: "r3/home-record-dev-zero", setup: func(t *testing.T, w string) {
			files("home/owner.lock", "")(t, w)
			symlink(t, "/dev/zero", filepath.Join(w, "home", "gateway.json"))
		}, args: []string{"session", "list"}, exit: 0},
		{name: "r3/home-record-huge", setup: files("home/owner.lock", "", "home/gateway.json", `{"ownerId":"x","socket":"/nowhere","pad":"`+strings.Repeat("x", 1<<20)+`"}`),
			args: []string{"session", "list"}, exit: 0},
		{name: "r3/home-owner-lock-fifo", setup: files("home/owner.lock", "FIFO"),
			args: []string{"session", "create", "s"}, exit: 1, code: "lock_failed"},
		{name: "r3/home-owner-lock-link-outside", setup: func(t *testing.T, w string) {
			os.MkdirAll(filepath.Join(w, "home"), 0o700)
			symlink(t, filepath.Join(w, "outside"), filepath.Join(w, "home", "owner.lock"))
		}, args: []string{"session", "create", "s"}, exit: 1, code: "lock_failed"},
		{name: "r3/home-config-lock-fifo", setup: files("home/config.json", `{"a":1}`, "home/config.json.lock", "FIFO"),
			args: []string{"config", "set", "a", "2"}, exit: 1, code: "config_write_failed"},
		{name: "r3/home-credentials-lock-link-outside", setup: func(t *testing.T, w string) {
			os.MkdirAll(filepath.Join(w, "home"), 0o700)
			symlink(t, filepath.Join(w, "outside"), filepath.Join(w, "home", "credentials.json.lock"))
		}, args: []string{"auth", "add", "p", "--provider", "google", "--api-key-stdin"}, stdin: "AIzaKey000001\n", exit: 1, code: "credentials_write_failed"},
		{name: "r3/home-db-fifo", setup: files("home/owner.lock", "", "home/state.db", "FIFO"),
			args: []string{"session", "create", "s"}, exit: 1, code: "store_open_failed"},
		{name: "r3/home-db-wal-fifo-read", setup: files("home/owner.lock", "", "home/state.db", "", "home/state.db-wal", "FIFO"),
			args: []string{"session", "list"}, exit: 1, code: "store_open_failed"},
		{name: "r3/home-skill-lock-fifo", setup: func(t *testing.T, w string) {
			h := sha256.Sum256([]byte("p\x00main\x00s"))
			withPlugin("in.md", okSkill, "home/locks/skills/"+hex.EncodeToString(h[:16])+".lock", "FIFO")(t, w)
		}, args: []string{"skill", "write", "s", "SKILL.md", "--plugin", "p", "--from", "$W/in.md"}, exit: 1, code: "lock_failed"},
		{name: "r3/home-gateway-log-fifo", setup: files("home/gateway.log", "FIFO"),
			args: []string{"gateway", "run", "--detach"}, exit: 1, code: "detach_failed"},

		// Input bounds: refused whole, nothing stored, nothing started.
		{name: "r3/auth-key-stdin-100kb", args: []string{"auth", "add", "g", "--provider", "google", "--api-key-stdin"}, stdin: strings.Repeat("k", 100000) + "\n", exit: 2, code: "invalid_secret"},
		{name: "r3/auth-key-env-100kb", env: []string{"BIGKEY=" + strings.Repeat("k", 100000)}, args: []string{"auth", "add", "g", "--provider", "google", "--api-key-env", "BIGKEY"}, exit: 2, code: "invalid_secret"},
		{name: "r3/auth-key-nul", args: []string{"auth", "add", "g", "--provider", "google", "--api-key-stdin"}, stdin: "AIzaKey\x00tail\n", exit: 2, code: "invalid_secret", lacks: "AIzaKey"},
		{name: "r3/auth-key-escape", args: []string{"auth", "add", "g", "--provider", "google", "--api-key-stdin"}, stdin: "AIzaKey\x1b[2Jx\n", exit: 2, code: "invalid_secret"},
		{name: "r3/auth-key-invalid-utf8", args: []string{"auth", "add", "g", "--provider", "google", "--api-key-stdin"}, stdin: "AIzaKey\xff\xfe\n", exit: 2, code: "invalid_secret"},
		{name: "r3/auth-key-nul-existing-home", setup: files("home/credentials.json", `{"version":1,"profiles":{}}`),
			args: []string{"auth", "add", "g", "--provider", "google", "--api-key-stdin"}, stdin: "AIza\x00\n", exit: 2, code: "invalid_secret"},
		rpc("max-report-bytes-string", `{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":"100000"}},"sessionKey":"cli","agentId":"main"}`, "invalid_field"),
		rpc("max-report-bytes-string-enabled", `{"request":{"version":1,"action":"start","question":"q","output":{"maxReportBytes":"100000"}},"sessionKey":"cli","agentId":"main"}`, "invalid_field", researchReady()),
		{name: "r3/research-wait-timeout-1ns", args: []string{"research", "wait", "rj_aaaaaaaaaaaaaaaa", "--timeout", "1ns"}, exit: 2, code: "invalid_timeout"},
		{name: "r3/research-wait-timeout-999us", args: []string{"research", "wait", "rj_aaaaaaaaaaaaaaaa", "--timeout", "999us"}, exit: 2, code: "invalid_timeout"},
		{name: "r3/research-start-wait-timeout-1ns", setup: researchReady(), args: []string{"research", "start", "--wait", "--timeout", "1ns", "q"}, exit: 2, code: "invalid_timeout"},
		{name: "r3/research-start-timeout-without-wait", setup: researchReady(), args: []string{"research", "start", "--timeout", "5s", "q"}, exit: 2, code: "invalid_timeout"},
		{name: "r3/research-wait-timeout-negative", args: []string{"research", "wait", "rj_aaaaaaaaaaaaaaaa", "--timeout=-1s"}, exit: 2, code: "invalid_timeout"},
		{name: "r3/research-idempotency-key-rlo", setup: researchReady(), args: []string{"research", "start", "--idempotency-key", "abc\u202edef", "q"}, exit: 2, code: "invalid_idempotency_key"},
		{name: "r3/research-idempotency-key-zwj", setup: researchReady(), args: []string{"research", "start", "--idempotency-key", "a\u200db", "q"}, exit: 2, code: "invalid_idempotency_key"},
		{name: "r3/research-idempotency-key-nbsp", setup: researchReady(), args: []string{"research", "start", "--idempotency-key", "a\u00a0b", "q"}, exit: 2, code: "invalid_idempotency_key"},
		{name: "r3/research-idempotency-key-bad-utf8", setup: researchReady(), args: []string{"research", "start", "--idempotency-key", "a\xffb", "q"}, exit: 2, code: "invalid_idempotency_key"},
		{name: "r3/mcp-max-frame-bytes", args: []string{"mcp", "call", "--method", "ping", "--max-frame-bytes", "1", "--", "true"}, exit: 2, code: "invalid_limit"},
		// A number beyond float64 is a JSON number the file holds as written
		// (it was invalid_params, a code meant for malformed calls).
		{name: "r3/config-set-huge-number", homeRecords: true, args: []string{"config", "set", "n", "[1e999]"}, exit: 0},

		// A file where the skill has a folder: refused before staging
		// naming the path (not_a_file), nothing left (no staging folder).
		{name: "r3/skill-file-over-folder", setup: withPlugin("home/agents/main/skills/s/SKILL.md", okSkill, "home/agents/main/skills/s/scripts/a/b.sh", "echo b\n", "in.sh", "echo hi\n", "home/locks/skills", "DIR"),
			args: []string{"skill", "write", "s", "scripts/a", "--plugin", "p", "--from", "$W/in.sh"}, exit: 1, code: "not_a_file", has: "cannot write scripts/a: it is a folder of skill s; a file cannot replace it"},

		// Provider text on the terminal: escaped, no forged line.
		{name: "r3/terminal-create-forge", fake: true, homeRecords: true, human: true, setup: researchReady(),
			args: []string{"research", "start", "fake:create-400-forge"}, exit: 1},
		{name: "r3/terminal-status-and-reason-forge", fake: true, homeRecords: true, human: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:forge-text q"}, exit: 0, has: `\nclawkit: error: forged by the provider\x1b[2J`},
	}
}

// grep-tree TEXT DIR: fails unless some regular file below DIR contains
// TEXT (a plain string); negated, fails if any does, naming it. A secret
// must be in no published file, whatever its name.
func cmdGrepTree(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: grep-tree TEXT DIR")
	}
	var found []string
	err := filepath.WalkDir(ts.MkAbs(args[1]), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), args[0]) {
			found = append(found, p)
		}
		return err
	})
	ts.Check(err)
	switch {
	case neg && len(found) > 0:
		ts.Fatalf("%q found in %s", args[0], strings.Join(found, ", "))
	case !neg && len(found) == 0:
		ts.Fatalf("%q found in no file below %s", args[0], args[1])
	}
}

// nest (-env VAR | -file FILE) N OPEN MIDDLE CLOSE: sets VAR to, or
// writes FILE with, OPEN repeated N times, MIDDLE, then CLOSE repeated N
// times: a value nested N deep ('[' 1 ']'), a key of N segments ('a.' v
// ”), a long string (x ” ”), without a shell loop.
func cmdNest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 6 || (args[0] != "-env" && args[0] != "-file") {
		ts.Fatalf("usage: nest (-env VAR | -file FILE) N OPEN MIDDLE CLOSE")
	}
	n := intArg(ts, "nest", "N", args[2], 0)
	v := strings.Repeat(args[3], n) + args[4] + strings.Repeat(args[5], n)
	if args[0] == "-env" {
		ts.Setenv(args[1], v)
		return
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(v), 0o600))
}

// catalogCodes are the codes of docs/errors.md's table and of the skill
// lint findings' own code space (docs/skills.md's table, which errors.md
// points to). "" is there too: a report document (skill validate) that is
// not an error document carries no code.
func catalogCodes(t *testing.T) map[string]bool {
	codes := map[string]bool{"": true}
	for _, doc := range []string{"errors.md", "skills.md"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if code, ok := strings.CutPrefix(line, "| `"); ok {
				if i := strings.Index(code, "`"); i > 0 {
					codes[code[:i]] = true
				}
			}
		}
	}
	if len(codes) < 100 {
		t.Fatalf("docs/errors.md lists only %d codes", len(codes))
	}
	return codes
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
