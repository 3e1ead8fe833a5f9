package testscript

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// Helpers for the skill bundle and watch scripts (skill_bundle*.txtar,
// skill_watch*.txtar).
func skillStreamKit() scriptKit {
	return scriptKit{
		// skill-watch-run passes signals on to the watch it runs;
		// skill-watch-epipe closes a real watch's stdout pipe.
		programs: map[string]func(){
			"skill-watch-run":   skillWatchRun,
			"skill-watch-epipe": skillWatchEPIPE,
		},
		cmds: map[string]scriptCmd{
			"skill-tar":         cmdSkillTar,
			"skill-tar-cut":     cmdSkillTarCut,
			"skill-watch-check": cmdSkillWatchCheck,
			"skill-exchange":    cmdSkillExchange,
		},
	}
}

// skill-tar OUT ENTRY…: write a tar with the given entries, for bundles no
// honest tool makes. ENTRY is TYPE:NAME[=DATA] with TYPE f (regular file,
// DATA the content, or @FILE for a file's), x (executable file), d (folder), l (symbolic link,
// DATA the target), h (hard link, DATA the target), c (character device),
// p (FIFO) or g (PAX global header).
func cmdSkillTar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: skill-tar OUT ENTRY…")
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("skill-tar: %v", err)
	}
	err = writeTar(f, args[1:], func(p string) ([]byte, error) { return os.ReadFile(ts.MkAbs(p)) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		ts.Fatalf("skill-tar: %v", err)
	}
}

// skill-tar-cut IN N OUT: write the first N bytes of IN to OUT (N may be
// negative: all but the last -N bytes), a bundle as a copy cut short
// leaves it. Prints OUT's size.
func cmdSkillTarCut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: skill-tar-cut IN N OUT")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	n := intArg(ts, "skill-tar-cut", "byte count", args[1], -len(data))
	if n < 0 {
		n += len(data)
	}
	if n < 0 || n > len(data) {
		ts.Fatalf("skill-tar-cut: %s has %d bytes; cannot keep %s", args[0], len(data), args[1])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), data[:n], 0o644))
	fmt.Fprintf(ts.Stdout(), "%d bytes\n", n)
}

// writeTar writes a tar of entries (TYPE:NAME[=DATA], as for skill-tar) to
// w: the work of skill-tar and tarOf. readFile reads an @FILE's content;
// with nil, @FILE is refused.
func writeTar(w io.Writer, entries []string, readFile func(string) ([]byte, error)) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		kind, rest, ok := strings.Cut(e, ":")
		if !ok {
			return fmt.Errorf("bad entry %q", e)
		}
		name, data, _ := strings.Cut(rest, "=")
		if strings.HasPrefix(data, "@") {
			if readFile == nil {
				return fmt.Errorf("entry %q: no @FILE here", e)
			}
			b, err := readFile(data[1:])
			if err != nil {
				return err
			}
			data = string(b)
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch kind {
		case "f", "x":
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
			if kind == "x" {
				h.Mode = 0o755
			}
		case "d":
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, data
		case "h":
			h.Typeflag, h.Linkname = tar.TypeLink, data
		case "c":
			h.Typeflag = tar.TypeChar
		case "p":
			h.Typeflag = tar.TypeFifo
		case "g":
			h = &tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": data}}
		default:
			return fmt.Errorf("bad entry type %q", kind)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(data)); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// skill-watch-run OUT ARGS…: run `clawkit ARGS…` with its stdout going
// straight to the file OUT (unbuffered, so skill-await sees each line as
// it is printed), its stderr to OUT.stderr and its pid to OUT.pid. SIGINT and SIGTERM are
// passed on; the helper exits with clawkit's exit code and prints it.
func skillWatchRun() {
	if len(os.Args) < 3 {
		die("usage: skill-watch-run OUT ARGS…")
	}
	out, err := os.Create(os.Args[1])
	if err != nil {
		die("%v", err)
	}
	errf, err := os.Create(os.Args[1] + ".stderr")
	if err != nil {
		die("%v", err)
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	cmd := exec.Command(bin, os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = out, errf
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	if err := os.WriteFile(os.Args[1]+".pid", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		die("%v", err)
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	fmt.Printf("clawkit exit %d\n", code)
	os.Exit(code)
}

// skill-watch-epipe ARGS…: run `clawkit ARGS…` with stdout a pipe, read
// the first line, close the pipe, then wait (up to 2 minutes) for clawkit
// to end by itself, without any further edit: it must notice that its
// reader is gone. Prints the first line and clawkit's exit code.
func skillWatchEPIPE() {
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	cmd := exec.Command(bin, os.Args[1:]...)
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		die("%v", err)
	}
	if err := cmd.Start(); err != nil {
		die("%v", err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		die("first line: %v", err)
	}
	fmt.Print("first: " + line)
	pipe.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		die("clawkit kept running for 2 minutes after its stdout closed")
	}
	fmt.Printf("clawkit exit %d\n", cmd.ProcessState.ExitCode())
}

// skill-watch-check FILE: check a `skill watch --json` stream's rules and
// print its shape, one word per event with runs of change collapsed:
// seq counts 1, 2, 3…; the first event is the initial change; available
// only ends an outage (never without an unavailable before it, never
// twice); every line is one JSON object with a known event and a
// revision. The last unavailable of a stopped watch prints as
// unavailable(stopped).
func cmdSkillWatchCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: skill-watch-check FILE")
	}
	shape, err := watchShape(ts.ReadFile(args[0]))
	if err != nil {
		ts.Fatalf("skill-watch-check: %s: %v", args[0], err)
	}
	fmt.Fprintln(ts.Stdout(), shape)
}

// watchShape is skill-watch-check's work on the stream's text.
func watchShape(stream string) (string, error) {
	revision := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	var words []string
	down := false
	for i, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		var ev struct {
			Event    string
			Seq      int
			Revision string
			Initial  bool
			Reason   string
			Skills   []json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			return "", fmt.Errorf("line %d is not JSON: %v: %s", i+1, err, l)
		}
		if ev.Seq != i+1 {
			return "", fmt.Errorf("line %d has seq %d", i+1, ev.Seq)
		}
		if !revision.MatchString(ev.Revision) || ev.Skills == nil {
			return "", fmt.Errorf("line %d has no revision or skills: %s", i+1, l)
		}
		if i == 0 && (ev.Event != "change" || !ev.Initial) {
			return "", fmt.Errorf("the first event is not the initial change: %s", l)
		}
		w := ev.Event
		switch ev.Event {
		case "change":
			if len(words) > 0 && words[len(words)-1] == "change" {
				continue
			}
		case "unavailable":
			if strings.HasPrefix(ev.Reason, "stopped") {
				w = "unavailable(stopped)"
			} else if down {
				return "", fmt.Errorf("line %d: unavailable twice without available: %s", i+1, l)
			}
			down = true
		case "available":
			if !down {
				return "", fmt.Errorf("line %d: available without an outage: %s", i+1, l)
			}
			down = false
		default:
			return "", fmt.Errorf("line %d: unknown event %q", i+1, ev.Event)
		}
		words = append(words, w)
	}
	return strings.Join(words, " "), nil
}

// skill-exchange A B: swap two paths in one atomic step (renameat2 with
// RENAME_EXCHANGE), so a watch never sees either missing in between.
func cmdSkillExchange(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: skill-exchange A B")
	}
	if err := unix.Renameat2(unix.AT_FDCWD, ts.MkAbs(args[0]), unix.AT_FDCWD, ts.MkAbs(args[1]), unix.RENAME_EXCHANGE); err != nil {
		ts.Fatalf("skill-exchange: exchange %s %s: %v", args[0], args[1], err)
	}
}

// tarOf builds a tar for hostile cases: entries are TYPE:NAME[=DATA] as
// for skill-tar, without @FILE. A bad entry is a mistake in the table.
func tarOf(entries ...string) string {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries, nil); err != nil {
		panic(err)
	}
	return buf.String()
}

// skillStreamHostile are the hostile cases of skill bundle, write
// --from-bundle, watch, and the --from-dir and name fixes: each refused
// cleanly, the work folder unchanged.
func skillStreamHostile() []hostileCase {
	md := "---\nname: s\ndescription: A skill.\n---\nBody.\n"
	fromBundle := func(name, tarData string, exit int, code string) hostileCase {
		return hostileCase{name: "bundle/" + name, setup: withPlugin("b.tar", tarData), args: []string{"skill", "write", "s", "--plugin", "p", "--from-bundle", "$W/b.tar"}, exit: exit, code: code}
	}
	watchCfg := func(v string) func(t *testing.T, w string) {
		return func(t *testing.T, w string) {
			withPlugin()(t, w)
			write(t, filepath.Join(w, "home", "config.json"), fmt.Sprintf(`{"plugins":{"entries":{"p":{"path":%q}}},"skills":{"load":{"watch":%s}}}`, filepath.Join(w, "plugin"), v))
		}
	}
	// Truncated bundles (issue 31 item 1): an installed skill with a
	// reference, and a bundle of a 515-byte SKILL.md (data ends at byte
	// 1,027, padding at 1,536) and that reference, cut short. The snapshot
	// proves the installed skill is untouched.
	longMD := md + strings.Repeat("x", 515-len(md)-1) + "\n"
	whole := tarOf("f:s/SKILL.md="+longMD, "f:s/references/api.md=# API\n")
	truncated := func(name string, n int) hostileCase {
		if n < 0 {
			n += len(whole)
		}
		return hostileCase{name: "bundle/truncated-" + name,
			setup: withPlugin("b.tar", whole[:n], "home/agents/main/skills/s/SKILL.md", md, "home/agents/main/skills/s/references/api.md", "# API\n"),
			args:  []string{"skill", "write", "s", "--plugin", "p", "--from-bundle", "$W/b.tar"}, exit: 1, code: "invalid_bundle"}
	}
	return []hostileCase{
		truncated("1027", 1027),
		truncated("1127", 1127),
		truncated("1535", 1535),
		truncated("1536", 1536),
		truncated("data-block", 600),
		truncated("header", 1600),
		truncated("no-end-marker", -1024),
		truncated("one-zero-block", -512),
		{name: "skillpath/write-name-not-utf8", setup: withPlugin("in.md", md), args: []string{"skill", "write", "s\xff", "SKILL.md", "--plugin", "p", "--from", "$W/in.md"}, exit: 2, code: "invalid_path"},
		{name: "skillpath/read-name-not-utf8", setup: withPlugin(), args: []string{"skill", "read", "s\xff", "SKILL.md", "--plugin", "p"}, exit: 2, code: "invalid_path"},
		{name: "skillpath/read-file-not-utf8", setup: withPlugin(), args: []string{"skill", "read", "s", "references/\xff.md", "--plugin", "p"}, exit: 2, code: "invalid_path"},
		{name: "skillpath/from-dir-slash-disallowed", setup: withPlugin("src/s/SKILL.md", md, "src/s/LICENSE", "x"), args: []string{"skill", "write", "s", "--plugin", "p", "--from-dir", "$W/src/s/"}, exit: 2, code: "invalid_path", has: "LICENSE"},
		fromBundle("symlink-entry", tarOf("f:s/SKILL.md="+md, "l:s/references/a.md=/etc/passwd"), 3, "path_escape"),
		fromBundle("hardlink-entry", tarOf("f:s/SKILL.md="+md, "h:s/references/a.md=s/SKILL.md"), 3, "path_escape"),
		fromBundle("dotdot-entry", tarOf("f:s/../../evil.md=x"), 3, "path_escape"),
		fromBundle("absolute-entry", tarOf("f:/s/SKILL.md=x"), 3, "path_escape"),
		fromBundle("device-entry", tarOf("f:s/SKILL.md="+md, "c:s/references/tty"), 2, "not_regular_file"),
		fromBundle("two-folders", tarOf("f:s/SKILL.md="+md, "f:t/SKILL.md="+md), 1, "invalid_bundle"),
		fromBundle("duplicate", tarOf("f:s/SKILL.md="+md, "f:s/SKILL.md="+md), 1, "invalid_bundle"),
		fromBundle("not-a-tar", "this is not a tar archive, only some text that is long enough", 1, "invalid_bundle"),
		fromBundle("empty-tar", tarOf(), 1, "invalid_bundle"),
		fromBundle("unsafe-content", tarOf("f:s/SKILL.md="+md+"rm -rf /\n"), 1, "unsafe_content"),
		{name: "bundle/from-bundle-fifo", setup: withPlugin("b.tar", "FIFO"), args: []string{"skill", "write", "s", "--plugin", "p", "--from-bundle", "$W/b.tar"}, exit: 2, code: "not_regular_file"},
		{name: "bundle/json-without-out", setup: withPlugin(), args: []string{"skill", "bundle", "s", "--plugin", "p"}, exit: 2, code: "usage"},
		{name: "bundle/out-in-missing-folder", setup: files("s/SKILL.md", md), args: []string{"skill", "bundle", "--dir", "$W/s", "--out", "$W/none/x.tar"}, exit: 1, code: "write_failed"},
		{name: "bundle/dir-unsafe", setup: files("s/SKILL.md", md+"rm -rf /\n"), args: []string{"skill", "bundle", "--dir", "$W/s", "--out", "$W/x.tar"}, exit: 1, code: "unsafe_content"},
		{name: "bundle/dir-link", setup: func(t *testing.T, w string) {
			files("real/s/SKILL.md", md)(t, w)
			os.Symlink(filepath.Join(w, "real", "s"), filepath.Join(w, "s"))
		}, args: []string{"skill", "bundle", "--dir", "$W/s", "--out", "$W/x.tar"}, exit: 3, code: "path_escape"},
		{name: "bundle/missing-skill", setup: withPlugin(), args: []string{"skill", "bundle", "nope", "--plugin", "p", "--out", "$W/x.tar"}, exit: 1, code: "not_found"},
		{name: "watch/disabled", setup: watchCfg("false"), args: []string{"skill", "watch", "--plugin", "p"}, exit: 3, code: "watch_disabled"},
		{name: "watch/not-a-bool", setup: watchCfg(`"no"`), args: []string{"skill", "watch", "--plugin", "p"}, exit: 2, code: "invalid_config"},
		{name: "watch/no-plugin-fresh-home", args: []string{"skill", "watch", "--plugin", "p"}, exit: 3, code: "plugin_unavailable"},
		{name: "watch/missing-dir", args: []string{"skill", "watch", "--dir", "$W/nowhere"}, exit: 2, code: "not_found"},
		// Issue 31 item 9: bounds and null config values.
		{name: "watch/poll-1ns", setup: withPlugin(), args: []string{"skill", "watch", "--plugin", "p", "--poll", "1ns"}, exit: 2, code: "invalid_limit"},
		{name: "watch/poll-99ms", setup: withPlugin(), args: []string{"skill", "watch", "--plugin", "p", "--poll", "99ms"}, exit: 2, code: "invalid_limit"},
		{name: "watch/interval-1ns", setup: withPlugin(), args: []string{"skill", "watch", "--plugin", "p", "--interval", "1ns"}, exit: 2, code: "invalid_limit"},
		{name: "watch/max-dirs-0", setup: withPlugin(), args: []string{"skill", "watch", "--plugin", "p", "--max-dirs", "0"}, exit: 2, code: "invalid_limit"},
		{name: "watch/poll-1ns-dir", setup: files("s/SKILL.md", md), args: []string{"skill", "watch", "--dir", "$W/s", "--poll", "1ns"}, exit: 2, code: "invalid_limit"},
		{name: "watch/null", setup: watchCfg("null"), args: []string{"skill", "watch", "--plugin", "p"}, exit: 2, code: "invalid_config_value"},
		{name: "watch/null-dir", setup: func(t *testing.T, w string) {
			watchCfg("null")(t, w)
			files("s/SKILL.md", md)(t, w)
		}, args: []string{"skill", "watch", "--dir", "$W/s"}, exit: 2, code: "invalid_config_value"},
		{name: "watch/null-load", setup: func(t *testing.T, w string) {
			withPlugin()(t, w)
			write(t, filepath.Join(w, "home", "config.json"), fmt.Sprintf(`{"plugins":{"entries":{"p":{"path":%q}}},"skills":{"load":null}}`, filepath.Join(w, "plugin")))
		}, args: []string{"skill", "watch", "--plugin", "p"}, exit: 2, code: "invalid_config_value"},
		{name: "watch/skills-not-object", setup: func(t *testing.T, w string) {
			withPlugin()(t, w)
			write(t, filepath.Join(w, "home", "config.json"), fmt.Sprintf(`{"plugins":{"entries":{"p":{"path":%q}}},"skills":"off"}`, filepath.Join(w, "plugin")))
		}, args: []string{"skill", "watch", "--plugin", "p"}, exit: 2, code: "invalid_config_value"},
		// plugins inspect (issue 31 item 13): unknown and malformed ids
		// refused; a hostile manifest reported (status error), never
		// blocking, nothing created.
		{name: "plugins/inspect-unknown", setup: withPlugin(), args: []string{"plugins", "inspect", "nope"}, exit: 1, code: "not_found"},
		{name: "plugins/inspect-unknown-fresh-home", args: []string{"plugins", "inspect", "p"}, exit: 1, code: "not_found"},
		{name: "plugins/inspect-bad-id", setup: withPlugin(), args: []string{"plugins", "inspect", "../p"}, exit: 2, code: "invalid_plugin_id"},
		{name: "plugins/inspect-bidi-id", setup: withPlugin(), args: []string{"plugins", "inspect", "p\u202e"}, exit: 2, code: "invalid_plugin_id"},
		{name: "plugins/inspect-fifo-manifest", setup: func(t *testing.T, w string) {
			withPlugin()(t, w)
			os.Remove(filepath.Join(w, "plugin", "openclaw.plugin.json"))
			fifo(t, filepath.Join(w, "plugin", "openclaw.plugin.json"))
		}, args: []string{"plugins", "inspect", "p"}, exit: 0, has: `"status": "error"`},
		{name: "plugins/inspect-huge-manifest", setup: func(t *testing.T, w string) {
			withPlugin()(t, w)
			write(t, filepath.Join(w, "plugin", "openclaw.plugin.json"), `{"id":"p","x":"`+strings.Repeat("a", 300<<10)+`"}`)
		}, args: []string{"plugins", "inspect", "p"}, exit: 0, has: `larger than 262144 bytes`},
		// Issue 31 item 11: a file where a folder is needed, named.
		{name: "bundle/out-is-folder", setup: files("s/SKILL.md", md, "out", "DIR"), args: []string{"skill", "bundle", "--dir", "$W/s", "--out", "$W/out"}, exit: 1, code: "write_failed", has: "it is a folder; the bundle is one file"},
		{name: "bundle/out-below-file", setup: files("s/SKILL.md", md, "f", "x"), args: []string{"skill", "bundle", "--dir", "$W/s", "--out", "$W/f/x.tar"}, exit: 1, code: "write_failed", has: "is a file where a folder is needed"},
		{name: "bundle/dir-missing-names-dir", args: []string{"skill", "bundle", "--dir", "$W/nowhere", "--out", "$W/x.tar"}, exit: 2, code: "not_found", has: "--dir "},
		{name: "skillpath/write-over-folder", setup: withPlugin("in.md", "x\n", "home/agents/main/skills/s/SKILL.md", md, "home/agents/main/skills/s/references/d/a.md", "a\n"),
			args: []string{"skill", "write", "s", "references/d", "--plugin", "p", "--from", "$W/in.md"}, exit: 1, code: "not_a_file", has: "it is a folder of skill s"},
		{name: "skillpath/write-below-file", setup: withPlugin("in.md", "x\n", "home/agents/main/skills/s/SKILL.md", md, "home/agents/main/skills/s/references/a.md", "a\n"),
			args: []string{"skill", "write", "s", "references/a.md/b.md", "--plugin", "p", "--from", "$W/in.md"}, exit: 1, code: "not_a_folder", has: "references/a.md is a file"},
		{name: "skillpath/agents-is-file", setup: withPlugin("src/s/SKILL.md", md, "home/agents", "x"),
			args: []string{"skill", "write", "s", "--plugin", "p", "--from-dir", "$W/src/s"}, exit: 1, code: "not_a_folder", has: "agents is a file where a folder is needed"},
		{name: "skillpath/skill-is-file", setup: withPlugin("src/s/SKILL.md", md, "home/agents/main/skills/s", "x"),
			args: []string{"skill", "write", "s", "--plugin", "p", "--from-dir", "$W/src/s"}, exit: 1, code: "not_a_skill"},
		{name: "skillpath/root-is-file", setup: withPlugin("in.md", md, "home/agents/main/skills", "x"),
			args: []string{"skill", "write", "s", "SKILL.md", "--plugin", "p", "--from", "$W/in.md"}, exit: 1, code: "not_a_folder", has: "the skills root"},
	}
}
