// Command testsum reads `go test -json` on stdin and prints what `go test`
// would print (package result lines, the output of failed tests, build
// errors), then a summary of skipped tests grouped by reason, the names of
// the failed tests, and one closing line "tests: N passed, N failed, N
// skipped". It exits 1 when any
// test or package failed, so `make test` stays red on a failure even
// without pipefail.
//
// Why: plain `go test ./...` prints only "ok" lines, so tests skipped for
// a missing peer (or for running as root) went unnoticed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// fileLine strips the "    file_test.go:12: " prefix of a t.Log line.
var fileLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// scriptSkip is testscript's echo of a skip command.
var scriptSkip = regexp.MustCompile(`^> (?:\[[^\]]*\] )*skip '?(.*?)'?$`)

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

// printer keeps the first write error, so that run reports it once at the
// end instead of after every line.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) print(a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprint(p.w, a...)
	}
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

func run(in io.Reader, w io.Writer) int {
	out := &printer{w: w}
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	var passed, failed, skipped int
	var failedNames []string
	reasons := map[string][]string{}
	pkgFailed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			out.print(string(line), "\n") // build errors and anything not JSON
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "output", "build-output":
			if ev.Test == "" {
				// Package-level lines: keep go test's own result lines.
				o := ev.Output
				if strings.HasPrefix(o, "ok  ") || strings.HasPrefix(o, "FAIL") || strings.HasPrefix(o, "?   ") ||
					strings.HasPrefix(o, "panic:") || ev.Action == "build-output" || strings.HasPrefix(o, "# ") {
					out.print(o)
				} else {
					outputs[k] = append(outputs[k], o)
				}
				continue
			}
			outputs[k] = append(outputs[k], ev.Output)
		case "pass":
			if ev.Test != "" {
				passed++
			}
			delete(outputs, k)
		case "skip":
			if ev.Test != "" {
				skipped++
				r := skipReason(outputs[k])
				reasons[r] = append(reasons[r], ev.Package[strings.LastIndex(ev.Package, "/")+1:]+"."+ev.Test)
			}
			delete(outputs, k)
		case "fail":
			if ev.Test != "" {
				failed++
				failedNames = append(failedNames, ev.Package[strings.LastIndex(ev.Package, "/")+1:]+"."+ev.Test)
				out.print(strings.Join(outputs[k], ""))
			} else {
				pkgFailed = true
				out.print(strings.Join(outputs[k], ""))
			}
			delete(outputs, k)
		}
	}
	if len(reasons) > 0 {
		rs := make([]string, 0, len(reasons))
		for r := range reasons {
			rs = append(rs, r)
		}
		sort.Slice(rs, func(i, j int) bool {
			if len(reasons[rs[i]]) != len(reasons[rs[j]]) {
				return len(reasons[rs[i]]) > len(reasons[rs[j]])
			}
			return rs[i] < rs[j]
		})
		for _, r := range rs {
			names := reasons[r]
			sort.Strings(names)
			out.printf("skipped %d: %s (%s)\n", len(names), r, strings.Join(names, ", "))
		}
	} else {
		out.print("skipped 0\n")
	}
	if len(failedNames) > 0 {
		// The failed tests by name, at the end where a reader looks (a
		// parent test fails with its subtests: both are named).
		sort.Strings(failedNames)
		out.printf("failed %d: %s\n", len(failedNames), strings.Join(failedNames, ", "))
	}
	out.printf("tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if out.err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "testsum: %v\n", out.err) // stdout failed; stderr is all there is
		return 1
	}
	if failed > 0 || pkgFailed {
		return 1
	}
	return 0
}

// skipReason is the argument of the skipped test's t.Skip (the last line
// that starts with go test's "file_test.go:12: " prefix: a message of
// several lines is named by its first, not by its last, which may be a
// line of a tool's output such as `docker info`'s "Client:"), or
// testscript's skip message; else the last meaningful line printed.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if fileLine.MatchString(lines[i]) {
			l := strings.TrimSpace(fileLine.ReplaceAllString(lines[i], ""))
			l = strings.TrimPrefix(l, "skip: ")
			if m := scriptSkip.FindStringSubmatch(l); m != nil {
				l = m[1]
			}
			if l != "" {
				return l
			}
		}
		if m := scriptSkip.FindStringSubmatch(strings.TrimSpace(lines[i])); len(m) > 1 && m[1] != "" {
			return m[1]
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		l = strings.TrimSpace(fileLine.ReplaceAllString(lines[i], ""))
		l = strings.TrimPrefix(l, "skip: ")
		// testscript echoes the line: > [!cond] skip 'reason'
		if m := scriptSkip.FindStringSubmatch(l); m != nil {
			l = m[1]
		}
		if l == "" {
			continue
		}
		return l
	}
	return "no reason given"
}
