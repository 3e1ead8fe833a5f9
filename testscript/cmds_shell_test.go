package testscript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// Commands that stand in for shell idioms ($(cat f), globs, >>, for
// loops), so that `exec sh -c` is left where a shell is what a script
// tests: a pipe, a redirection, ulimit, a background job, a signal.

// setenv-file [-field N] VAR FILE: sets $VAR to FILE's text, white space
// at either end trimmed, or to its Nth white-space separated field (from
// 1). FILE may be stdout or stderr, the last command's. A later command
// then names the value as $VAR, where a script would otherwise need
// "$(cat FILE)" or "$(cut -d' ' -fN FILE)" in a shell. It fails on an
// empty value: a script never means to pass "" on.
func cmdSetenvFile(ts *testscript.TestScript, neg bool, args []string) {
	field := 0
	if len(args) == 4 && args[0] == "-field" {
		field, args = intArg(ts, "setenv-file", "field number", args[1], 1), args[2:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setenv-file [-field N] VAR FILE")
	}
	v := strings.TrimSpace(ts.ReadFile(args[1]))
	if field > 0 {
		f := strings.Fields(v)
		if len(f) < field {
			ts.Fatalf("setenv-file: %s has %d fields, not %d", args[1], len(f), field)
		}
		v = f[field-1]
	}
	if v == "" {
		ts.Fatalf("setenv-file: %s is empty", args[1])
	}
	ts.Setenv(args[0], v)
}

// setenv-quoted VAR GOSTRING: sets $VAR to the value of a Go string
// literal, for bytes a script cannot spell as they are (a name that is
// not UTF-8: setenv-quoted NAME '"p\xffdf"').
func cmdSetenvQuoted(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setenv-quoted VAR GOSTRING")
	}
	v, err := strconv.Unquote(args[1])
	if err != nil {
		ts.Fatalf("setenv-quoted: %s is not a Go string literal: %v", args[1], err)
	}
	ts.Setenv(args[0], v)
}

// glob [-env VAR] PATTERN: prints the paths matching PATTERN
// (filepath.Glob, relative to the current folder), one a line; fails when
// none does, and with ! when any does. With -env it needs exactly one
// match and sets $VAR to it: an installed runtime's folder, whose name is
// a digest the script does not know.
func cmdGlob(ts *testscript.TestScript, neg bool, args []string) {
	env := ""
	if len(args) == 3 && args[0] == "-env" {
		env, args = args[1], args[2:]
	}
	if len(args) != 1 || (neg && env != "") {
		ts.Fatalf("usage: [!] glob [-env VAR] PATTERN")
	}
	abs, err := filepath.Glob(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("glob: %v", err)
	}
	// Print the matches as the pattern spelled them, not as absolute paths.
	dir := ts.MkAbs(".")
	var got []string
	for _, m := range abs {
		if !filepath.IsAbs(args[0]) {
			if r, err := filepath.Rel(dir, m); err == nil {
				m = r
			}
		}
		got = append(got, m)
	}
	switch {
	case neg && len(got) > 0:
		ts.Fatalf("glob: %s matches %s", args[0], strings.Join(got, " "))
	case neg:
		return
	case len(got) == 0:
		ts.Fatalf("glob: nothing matches %s", args[0])
	case env != "" && len(got) != 1:
		ts.Fatalf("glob: %s matches %d paths, not 1: %s", args[0], len(got), strings.Join(got, " "))
	case env != "":
		ts.Setenv(env, got[0])
	}
	if _, err := fmt.Fprintln(ts.Stdout(), strings.Join(got, "\n")); err != nil {
		ts.Fatalf("%v", err)
	}
}

// append FILE TEXT: appends TEXT (no newline) to FILE, which must exist:
// what `printf TEXT >> FILE` did in a shell, for a script that damages a
// file on purpose.
func cmdAppend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: append FILE TEXT")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		ts.Fatalf("append: %v", err)
	}
	_, err = f.WriteString(args[1])
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	ts.Check(err)
}

// repeat N PROGRAM ARGS...: runs PROGRAM N times in a row (as exec does),
// with {i} in each argument replaced by the run's number (1 to N), and
// fails at the first run that fails. Prints "ran N". This is the shell's
// for i in $(seq 1 N) loop, where the loop is not what is tested.
func cmdRepeat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: repeat N PROGRAM [ARGS...]")
	}
	n := intArg(ts, "repeat", "count", args[0], 1)
	for i := 1; i <= n; i++ {
		argv := make([]string, len(args)-1)
		for j, a := range args[1:] {
			argv[j] = strings.ReplaceAll(a, "{i}", strconv.Itoa(i))
		}
		if err := ts.Exec(argv[0], argv[1:]...); err != nil {
			ts.Fatalf("repeat: run %d of %d: %s: %v", i, n, strings.Join(argv, " "), err)
		}
	}
	if _, err := fmt.Fprintf(ts.Stdout(), "ran %d\n", n); err != nil {
		ts.Fatalf("%v", err)
	}
}

// events-chained FILE: checks that FILE, one skill event a line (a hook's
// input, `skill events --json`'s JSONL), is one chain: the first event's
// before is null and each later event's before is the previous event's
// after (docs/skills.md). Prints "chained N".
func cmdEventsChained(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: events-chained FILE")
	}
	prev := json.RawMessage("null")
	n := 0
	for _, l := range strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n") {
		var ev struct{ Before, After json.RawMessage }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			ts.Fatalf("events-chained: line %d is not JSON: %v: %s", n+1, err, l)
		}
		if ev.Before == nil || ev.After == nil {
			ts.Fatalf("events-chained: line %d has no before or after: %s", n+1, l)
		}
		if !bytes.Equal(compact(ts, ev.Before), compact(ts, prev)) {
			ts.Fatalf("events-chained: broken at line %d: before %s, the previous after %s", n+1, ev.Before, prev)
		}
		prev = ev.After
		n++
	}
	if _, err := fmt.Fprintf(ts.Stdout(), "chained %d\n", n); err != nil {
		ts.Fatalf("%v", err)
	}
}

func compact(ts *testscript.TestScript, m json.RawMessage) []byte {
	var b bytes.Buffer
	ts.Check(json.Compact(&b, m))
	return b.Bytes()
}
