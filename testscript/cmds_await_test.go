package testscript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
)

// The await-* commands are synchronisation points: a script waits for what
// a background process does (a log line, a job state, an exit) instead of
// sleeping. Each bound is a hang guard for a loaded 2-core machine, never
// a timing assertion; each prints what it saw, for the next stdout check.

// hangGuard bounds every wait below.
const hangGuard = 2 * time.Minute

// await polls check every interval until it reports done, or fails the
// script with what check last said once hangGuard has passed.
func await(ts *testscript.TestScript, interval time.Duration, check func() (done bool, why string)) {
	awaitWithin(ts, hangGuard, interval, check)
}

// awaitWithin is await with its own limit.
func awaitWithin(ts *testscript.TestScript, limit, interval time.Duration, check func() (done bool, why string)) {
	deadline := time.Now().Add(limit)
	for {
		done, why := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s after %s", why, limit)
		}
		time.Sleep(interval)
	}
}

// matchingLines are FILE's lines (in $WORK or the current folder) that
// match re; a file not there yet has none.
func matchingLines(ts *testscript.TestScript, file string, re *regexp.Regexp) []string {
	b, _ := os.ReadFile(ts.MkAbs(file))
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			got = append(got, l)
		}
	}
	return got
}

func mustRegexp(ts *testscript.TestScript, expr string) *regexp.Regexp {
	re, err := regexp.Compile(expr)
	if err != nil {
		ts.Fatalf("bad regexp %q: %v", expr, err)
	}
	return re
}

// await-line FILE REGEXP: waits until a line of FILE matches, then prints
// it (a gateway's log line, a URL a background helper wrote).
func cmdAwaitLine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: await-line FILE REGEXP")
	}
	re := mustRegexp(ts, args[1])
	await(ts, 50*time.Millisecond, func() (bool, string) {
		if got := matchingLines(ts, args[0], re); len(got) > 0 {
			_, _ = fmt.Fprintln(ts.Stdout(), got[0]) // the script's stdout buffer: cannot fail
			return true, ""
		}
		return false, fmt.Sprintf("no line of %s matches %s", args[0], args[1])
	})
}

// skill-await FILE N REGEXP: waits until at least N lines of FILE match
// REGEXP (a watch's stream), then prints the matching lines.
func cmdSkillAwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: skill-await FILE N REGEXP")
	}
	n := intArg(ts, "skill-await", "count", args[1], 0)
	re := mustRegexp(ts, args[2])
	await(ts, 20*time.Millisecond, func() (bool, string) {
		got := matchingLines(ts, args[0], re)
		if len(got) >= n {
			_, _ = fmt.Fprintln(ts.Stdout(), strings.Join(got, "\n")) // the script's stdout buffer: cannot fail
			return true, ""
		}
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		return false, fmt.Sprintf("%d of %d lines of %s match %s:\n%s", len(got), n, args[0], args[2], b)
	})
}

// fakegoogle-await LOGFILE SUBSTRING [COUNT]: waits until LOGFILE has at
// least COUNT (default 1) lines containing SUBSTRING, then prints "seen N".
// Scripts act on it while a request is in flight (for example kill a
// clawkit whose create the fake holds open).
func cmdFakeGoogleAwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: fakegoogle-await LOGFILE SUBSTRING [COUNT]")
	}
	want := 1
	if len(args) == 3 {
		want = intArg(ts, "fakegoogle-await", "count", args[2], 0)
	}
	await(ts, 20*time.Millisecond, func() (bool, string) {
		f, err := os.Open(ts.MkAbs(args[0]))
		n := 0
		if err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 4<<20) // a log line carries a whole request body
			for sc.Scan() {
				if strings.Contains(sc.Text(), args[1]) {
					n++
				}
			}
			fsx.CloseRead(f)
		}
		if n >= want {
			_, _ = fmt.Fprintf(ts.Stdout(), "seen %d\n", n) // the script's stdout buffer: cannot fail
			return true, ""
		}
		return false, fmt.Sprintf("fakegoogle-await: %d of %d lines with %q", n, want, args[1])
	})
}

// await-gateway-exit PID: waits until the process is gone (or a zombie:
// its parent, the script's background sh, may not have reaped it yet),
// then prints "exited".
func cmdAwaitGatewayExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: await-gateway-exit PID")
	}
	pid := intArg(ts, "await-gateway-exit", "pid", args[0], 1)
	await(ts, 20*time.Millisecond, func() (bool, string) {
		if !owner.PIDAlive(pid) {
			_, _ = fmt.Fprintln(ts.Stdout(), "exited") // the script's stdout buffer: cannot fail
			return true, ""
		}
		return false, fmt.Sprintf("pid %d still running", pid)
	})
}

// await-research-state JOBFILE STATE: runs `clawkit --json research list`
// (with the script's environment) until the job named in JOBFILE is in
// STATE; await-research-state-any STATE: until any job is. Prints "JOB
// STATE". Gateway scripts wait so for work done in the background (the
// poller, start-up recovery).
func cmdAwaitResearchState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: await-research-state JOBFILE STATE")
	}
	awaitState(ts, strings.TrimSpace(ts.ReadFile(args[0])), args[1])
}

func cmdAwaitResearchStateAny(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: await-research-state-any STATE")
	}
	awaitState(ts, "", args[0])
}

func awaitState(ts *testscript.TestScript, job, state string) {
	// Each try is a real clawkit process: the list must go through the
	// script's home and gateway as any command would. 100 ms between
	// tries keeps the script's log (every try is logged) short.
	await(ts, 100*time.Millisecond, func() (bool, string) {
		err := ts.Exec("clawkit", "--json", "research", "list")
		out := ts.ReadFile("stdout")
		var jobs []struct {
			Job   string `json:"job"`
			State string `json:"state"`
		}
		if err == nil && json.Unmarshal([]byte(out), &jobs) == nil {
			for _, j := range jobs {
				if (job == "" || j.Job == job) && j.State == state {
					_, _ = fmt.Fprintf(ts.Stdout(), "%s %s\n", j.Job, j.State) // the script's stdout buffer: cannot fail
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no job %s in state %s (last list: %v)\n%s%s", job, state, err, out, ts.ReadFile("stderr"))
	})
}

// skill-await-disk FILE SKILL [available]: reads SKILL's tree as it is on
// disk now (`clawkit skill list SKILL --plugin notes --json`) and waits for
// a change line of the watch stream FILE reporting exactly that tree as
// SKILL's after. With "available" it also waits for the available line
// that ends the last outage and fails unless that change line came before
// it: the edit was reconciled before anything was called available
// (docs/skills.md).
func cmdSkillAwaitDisk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || (len(args) == 3 && args[2] != "available") {
		ts.Fatalf("usage: skill-await-disk FILE SKILL [available]")
	}
	file, skill, untilUp := args[0], args[1], len(args) == 3
	if err := ts.Exec("clawkit", "skill", "list", skill, "--plugin", "notes", "--json"); err != nil {
		ts.Fatalf("skill list: %v", err)
	}
	var fr struct{ Revision struct{ TreeSha256 string } }
	out := ts.ReadFile("stdout")
	if err := json.Unmarshal([]byte(out), &fr); err != nil || fr.Revision.TreeSha256 == "" {
		ts.Fatalf("skill list: %v: %s", err, out)
	}
	tree := fr.Revision.TreeSha256
	await(ts, 20*time.Millisecond, func() (bool, string) {
		b, _ := os.ReadFile(ts.MkAbs(file))
		changeSeq, lastDown, upSeq := 0, 0, 0
		for _, l := range strings.Split(string(b), "\n") {
			var ev struct {
				Event  string
				Seq    int
				Skills []struct {
					Skill string
					After *struct{ TreeSha256 string }
				}
			}
			if json.Unmarshal([]byte(l), &ev) != nil {
				continue
			}
			switch ev.Event {
			case "unavailable":
				lastDown, upSeq = ev.Seq, 0
			case "available":
				if upSeq == 0 {
					upSeq = ev.Seq
				}
			case "change":
				for _, s := range ev.Skills {
					if s.Skill == skill && s.After != nil && s.After.TreeSha256 == tree {
						changeSeq = ev.Seq
					}
				}
			}
		}
		if changeSeq > 0 && !untilUp {
			_, _ = fmt.Fprintf(ts.Stdout(), "change %d reports %s %s\n", changeSeq, skill, tree) // the script's stdout buffer: cannot fail
			return true, ""
		}
		if untilUp && lastDown > 0 && upSeq > 0 {
			if changeSeq == 0 || changeSeq > upSeq {
				ts.Fatalf("available (seq %d) came before the change reporting %s %s (seq %d)", upSeq, skill, tree, changeSeq)
			}
			_, _ = fmt.Fprintf(ts.Stdout(), "change %d reports %s %s before available %d\n", changeSeq, skill, tree, upSeq) // the script's stdout buffer: cannot fail
			return true, ""
		}
		return false, fmt.Sprintf("no change line reports %s %s:\n%s", skill, tree, b)
	})
}
