package testscript

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// envErrorCodes names the file where every clawkit run of a script appends
// "CODE EXIT" for the failure it reported (cli.MainObserved), so the end
// of TestScripts can hold docs/errors.md's exit column to what the
// commands actually did: the static catalog check (pkg/errs TestCatalog)
// cannot see exits decided at run time, such as an MCP failure's
// (delivered or not, definitive or not).
const envErrorCodes = "CLAWKIT_TEST_ERROR_CODES"

// recordErrorCode appends one observation; an append of one short line
// with O_APPEND is atomic among the scripts' parallel processes.
func recordErrorCode(code errs.Code, exit int) {
	p := os.Getenv(envErrorCodes)
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return // the check then lacks this run; it cannot pass on a wrong exit it saw
	}
	_, _ = fmt.Fprintf(f, "%s %d\n", code, exit)
	_ = f.Close()
}

var (
	tableOnce  sync.Once
	tableExits map[string][]int
	tableErr   error
)

// errorTableExits is docs/errors.md's exit column: each code with the exit
// codes its row lists ("4 outcome unknown, 5 unavailable" is 4 and 5), and
// docs/skills.md's lint codes.
func errorTableExits() (map[string][]int, error) {
	tableOnce.Do(func() {
		tableExits = map[string][]int{}
		b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "errors.md"))
		if err != nil {
			tableErr = err
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, "| `")
			if !ok {
				continue
			}
			code, rest, ok := strings.Cut(rest, "` | ")
			if !ok {
				continue
			}
			exitCol, _, _ := strings.Cut(rest, " | ")
			for _, part := range strings.Split(exitCol, ",") {
				f := strings.Fields(part)
				if len(f) == 0 {
					continue
				}
				if n, err := strconv.Atoi(f[0]); err == nil {
					tableExits[code] = append(tableExits[code], n)
				}
			}
		}
		if len(tableExits) < 100 {
			tableErr = fmt.Errorf("docs/errors.md's table has only %d codes", len(tableExits))
		}
	})
	return tableExits, tableErr
}

// tableAllows reports whether docs/errors.md lists exit for code ("" when
// it does); codes outside the table are TestHostileInputs' business.
func tableAllows(code string, exit int) string {
	exits, err := errorTableExits()
	if err != nil {
		return err.Error()
	}
	want, ok := exits[code]
	if !ok {
		return ""
	}
	for _, e := range want {
		if e == exit {
			return ""
		}
	}
	return fmt.Sprintf("%#q exited %d, but docs/errors.md gives %v: fix the row (or the code, if the design says otherwise)", code, exit, want)
}

// checkObservedCodes reads the observations of every script and fails on a
// code whose exit the table does not list.
func checkObservedCodes(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return // no script failed a command
	}
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if seen[line] {
			continue
		}
		seen[line] = true
		code, exitText, ok := strings.Cut(line, " ")
		exit, err := strconv.Atoi(exitText)
		if !ok || err != nil {
			t.Errorf("unreadable observation %q", line)
			continue
		}
		if msg := tableAllows(code, exit); msg != "" {
			bad = append(bad, msg)
		}
	}
	sort.Strings(bad)
	for _, m := range bad {
		t.Error(m)
	}
}
