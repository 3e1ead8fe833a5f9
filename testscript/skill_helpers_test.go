package testscript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Helpers for the skill scripts (skill_*.txtar).
func skillKit() scriptKit {
	return scriptKit{
		// skill-hook is run by clawkit as a skill_changed hook;
		// skill-kill-loop SIGKILLs writers, skill-race races them.
		programs: map[string]func(){
			"skill-hook":      skillHook,
			"skill-kill-loop": skillKillLoop,
			"skill-race":      skillRace,
		},
		cmds: map[string]scriptCmd{
			"skill-bigfile": cmdSkillBigFile,
			"skill-many":    cmdSkillMany,
			"sarif-valid":   cmdSarifValid,
		},
	}
}

// sarif-valid FILE: check FILE against the SARIF 2.1.0 JSON schema
// (pkg/skilllint/testdata, where its source and licence are noted) and
// print the number of results and of suppressed results.
func cmdSarifValid(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sarif-valid FILE")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "pkg", "skilllint", "testdata", "sarif-schema-2.1.0.json"))
	ts.Check(err)
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	ts.Check(err)
	c := jsonschema.NewCompiler()
	ts.Check(c.AddResource("sarif-schema-2.1.0.json", schemaDoc))
	schema, err := c.Compile("sarif-schema-2.1.0.json")
	ts.Check(err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(ts.ReadFile(args[0])))
	if err != nil {
		if !neg {
			ts.Fatalf("sarif-valid: %s is not JSON: %v", args[0], err)
		}
		return
	}
	err = schema.Validate(doc)
	switch {
	case err != nil && !neg:
		ts.Fatalf("sarif-valid: %s is not valid SARIF 2.1.0: %v", args[0], err)
	case err == nil && neg:
		ts.Fatalf("sarif-valid: %s is valid SARIF 2.1.0", args[0])
	case err != nil:
		return
	}
	var log struct {
		Runs []struct {
			Results []struct {
				Suppressions []json.RawMessage
			}
		}
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &log))
	results, suppressed := 0, 0
	for _, r := range log.Runs {
		for _, res := range r.Results {
			results++
			if len(res.Suppressions) > 0 {
				suppressed++
			}
		}
	}
	fmt.Fprintf(ts.Stdout(), "valid SARIF 2.1.0: %d results, %d suppressed\n", results, suppressed)
}

// skill-bigfile PATH SIZE [PREFIX-FILE]: write a file of exactly SIZE bytes:
// the content of PREFIX-FILE (if given) padded with 'x' lines.
func cmdSkillBigFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: skill-bigfile PATH SIZE [PREFIX-FILE]")
	}
	size := intArg(ts, "skill-bigfile", "size", args[1], 0)
	var prefix []byte
	if len(args) == 3 {
		prefix = []byte(ts.ReadFile(args[2]))
	}
	if len(prefix) > size {
		ts.Fatalf("skill-bigfile: prefix longer than size")
	}
	pad := bytes.Repeat([]byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"), size/64+1)
	data := append(prefix, pad[:size-len(prefix)]...)
	p := ts.MkAbs(args[0])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		ts.Fatalf("skill-bigfile: %v", err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		ts.Fatalf("skill-bigfile: %v", err)
	}
}

// skill-many DIR N: create N one-line files DIR/f000.md … inside DIR.
func cmdSkillMany(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: skill-many DIR N")
	}
	n := intArg(ts, "skill-many", "count", args[1], 0)
	dir := ts.MkAbs(args[0])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ts.Fatalf("skill-many: %v", err)
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.md", i)), []byte("note\n"), 0o644); err != nil {
			ts.Fatalf("skill-many: %v", err)
		}
	}
}

// skill-hook OUT [EXIT]: a skill_changed hook. It appends what it reads on
// stdin (one event, one line) to OUT and exits with EXIT (default 0),
// printing a line on stderr when failing so scripts can see it reported.
func skillHook() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		die("usage: skill-hook OUT [EXIT]")
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		die("%v", err)
	}
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		die("%v", err)
	}
	if _, err := f.Write(in); err != nil {
		die("%v", err)
	}
	if err := f.Close(); err != nil {
		die("%v", err)
	}
	if len(os.Args) == 3 {
		code, _ := strconv.Atoi(os.Args[2])
		if code != 0 {
			fmt.Fprintln(os.Stderr, "hook refusing on purpose")
		}
		os.Exit(code)
	}
}

// skill-kill-loop N SKILLDIR A B: N trials of `clawkit skill write pdf
// references/big.md --plugin notes --from A|B` (alternating), each SIGKILLed
// after a random delay within the time one write takes on this machine
// (measured first; the delay only spreads the kills, no check depends on
// where a kill lands). After every trial it checks, through clawkit and on
// disk: the file is A or B, whole; `skill list` shows the skill with a
// revision and 2 files; `skill validate --dir SKILLDIR` and the installed
// validate pass with no finding about leftovers. It prints a one-line table.
func skillKillLoop() {
	if len(os.Args) != 5 {
		die("usage: skill-kill-loop N SKILLDIR A B")
	}
	n, _ := strconv.Atoi(os.Args[1])
	dir, pa, pb := os.Args[2], os.Args[3], os.Args[4]
	a, err := os.ReadFile(pa)
	if err != nil {
		die("%v", err)
	}
	b, err := os.ReadFile(pb)
	if err != nil {
		die("%v", err)
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	write := func(from string) *exec.Cmd {
		return exec.Command(bin, "skill", "write", "pdf", "references/big.md", "--plugin", "notes", "--from", from)
	}
	// One uncontended write gives the scale of the random delays.
	t0 := time.Now()
	if out, err := write(pb).CombinedOutput(); err != nil {
		die("calibration write: %v: %s", err, out)
	}
	span := time.Since(t0)
	killed, finished, leftovers, sawA, sawB := 0, 0, 0, 0, 0
	for i := 0; i < n; i++ {
		from := pa
		if i%2 == 1 {
			from = pb
		}
		cmd := write(from)
		if err := cmd.Start(); err != nil {
			die("%v", err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(span) + 1)))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else {
			finished++
		}
		ents, _ := os.ReadDir(filepath.Dir(dir))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				leftovers++
				break
			}
		}
		got, err := os.ReadFile(filepath.Join(dir, "references", "big.md"))
		switch {
		case err != nil:
			die("trial %d: the file is gone: %v", i, err)
		case bytes.Equal(got, a):
			sawA++
		case bytes.Equal(got, b):
			sawB++
		default:
			die("trial %d: the file is neither A nor B (%d bytes)", i, len(got))
		}
		// Validation and listing ignore whatever the kill left behind.
		if out, err := exec.Command(bin, "skill", "validate", "--dir", dir).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("0 errors, 0 warnings")) {
			die("trial %d: validate --dir: %v: %s", i, err, out)
		}
		if out, err := exec.Command(bin, "skill", "validate", "pdf", "--plugin", "notes").CombinedOutput(); err != nil {
			die("trial %d: validate: %v: %s", i, err, out)
		}
		out, err := exec.Command(bin, "skill", "list", "--plugin", "notes", "--json").Output()
		if err != nil {
			die("trial %d: list: %v", i, err)
		}
		var lr struct {
			Skills []struct {
				Skill    string
				Files    int
				Problem  string
				Revision *struct{ ContentSha256 string }
			}
		}
		if err := json.Unmarshal(out, &lr); err != nil || len(lr.Skills) != 1 || lr.Skills[0].Files != 2 || lr.Skills[0].Revision == nil || lr.Skills[0].Problem != "" {
			die("trial %d: list: %v: %s", i, err, out)
		}
	}
	fmt.Printf("trials %d: killed %d, finished %d, leftovers seen after %d, file A %d, file B %d\n", n, killed, finished, leftovers, sawA, sawB)
}

// skill-race N SKILLDIR TAG: N concurrent `clawkit skill write pdf
// references/TAG-<i>.md --plugin notes --from <file>` processes, each with
// its own content. Afterwards every write that exited 0 must be on disk
// with its content (no lost exit-0 write); the others must have exited
// non-zero. Prints how many of each.
func skillRace() {
	if len(os.Args) != 4 {
		die("usage: skill-race N SKILLDIR TAG")
	}
	n, _ := strconv.Atoi(os.Args[1])
	dir, tag := os.Args[2], os.Args[3]
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		die("%v", err)
	}
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		src := fmt.Sprintf("%s-%02d.src", tag, i)
		if err := os.WriteFile(src, []byte(fmt.Sprintf("writer %s %d\n", tag, i)), 0o644); err != nil {
			die("%v", err)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(bin, "skill", "write", "pdf", fmt.Sprintf("references/%s-%02d.md", tag, i), "--plugin", "notes", "--from", src)
			if out, err := cmd.CombinedOutput(); err != nil {
				codes[i] = cmd.ProcessState.ExitCode()
				fmt.Fprintf(os.Stderr, "writer %d: exit %d: %s", i, codes[i], out)
			}
		}(i)
	}
	wg.Wait()
	ok, failed := 0, 0
	for i, code := range codes {
		got, err := os.ReadFile(filepath.Join(dir, "references", fmt.Sprintf("%s-%02d.md", tag, i)))
		want := fmt.Sprintf("writer %s %d\n", tag, i)
		if code == 0 {
			ok++
			if err != nil || string(got) != want {
				die("LOST: writer %d exited 0 but its file is %q (%v)", i, got, err)
			}
		} else {
			failed++
		}
	}
	fmt.Printf("%d writers: %d exit 0, all present; %d exit non-zero\n", n, ok, failed)
}
