// Command partitionreport prints one row of the partition campaign's
// table (scripts/partition-test.sh, docs/scale-out.md "Partitions") from
// what one scenario left behind: the test cluster's statement log, the
// fake provider's request log, the owners table, the homes' published
// reports, the CLI results and the gateways' exit codes. A value that
// misses its target is marked FAIL.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/jackc/pgx/v5"
)

type lease struct {
	inc        int64
	gw         string
	start, end int64 // Unix ms, database clock
	lost       bool  // ended by expiry, not by a clean stop
}

func main() {
	name := flag.String("name", "", "scenario name")
	kind := flag.String("kind", "", "scenario kind")
	dbURL := flag.String("db", "", "the scenario's database")
	dir := flag.String("dir", "", "the scenario's directory")
	ttl := flag.Duration("ttl", 10*time.Second, "lease TTL")
	hosts := flag.String("hosts", "", "gateway=IP,…")
	interval := flag.Duration("interval", 6*time.Second, "longest poll interval (the fast interval with its jitter)")
	flag.Parse()
	ipOf := map[string]string{}
	for _, kv := range strings.Split(*hosts, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			ipOf[v] = k
		}
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, *dbURL)
	if err != nil {
		die("%v", err)
	}
	defer func() { _ = c.Close(ctx) }() // a report that only reads
	leases := readLeases(ctx, c, *dir)
	events := readEvents(filepath.Join(*dir, "events"))
	cutAt, _ := strconv.ParseInt(events["cut"], 10, 64)

	// Creates per job (by the create's input) and the polls of each
	// interaction, with who sent each request.
	type req struct {
		at   int64
		from string
	}
	creates := map[string]int{}
	polls := map[string][]int64{}
	var requests []req
	forLines(filepath.Join(*dir, "fake.log"), func(line string) {
		var e struct {
			Method, Path, From string
			AtMs               int64
			Body               json.RawMessage
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			return
		}
		host, _, _ := strings.Cut(e.From, ":")
		requests = append(requests, req{e.AtMs, ipOf[host]})
		switch {
		case e.Method == "POST" && e.Path == "/interactions":
			var b struct{ Input string }
			_ = json.Unmarshal(e.Body, &b)
			creates[b.Input]++
		case e.Method == "GET":
			id := strings.TrimPrefix(e.Path, "/interactions/")
			polls[id] = append(polls[id], e.AtMs)
		}
	})
	minC, maxC := 0, 0
	for _, n := range creates {
		if minC == 0 || n < minC {
			minC = n
		}
		maxC = max(maxC, n)
	}
	createsCell := fmt.Sprintf("%d–%d", minC, maxC)
	if minC != maxC {
		createsCell = fmt.Sprintf("%d (min) – %d (max)", minC, maxC)
	}
	if maxC > 1 {
		createsCell += " FAIL"
	}

	// Provider requests without a lease of the gateway that sent them.
	held := func(gw string, at int64) bool {
		for _, l := range leases {
			if l.gw == gw && at >= l.start && at <= l.end {
				return true
			}
		}
		return false
	}
	unleased := 0
	for _, r := range requests {
		if r.from != "" && !held(r.from, r.at) {
			unleased++
		}
	}
	// Publications without a lease: each report file's time against its
	// home's gateway leases.
	unpublished := 0
	reports := 0
	for gw := range map[string]bool{"g1": true, "g2": true, "g3": true} {
		files, _ := filepath.Glob(filepath.Join(*dir, gw, "research", "*", "report.md"))
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				continue
			}
			reports++
			if !held(gw, st.ModTime().UnixMilli()) {
				unpublished++
			}
		}
	}
	leaseCell := fmt.Sprintf("%d / %d (of %d requests, %d reports)", unleased, unpublished, len(requests), reports)
	if unleased+unpublished > 0 {
		leaseCell += " FAIL"
	}

	// Late statements: the server's log lines of an owner whose lease had
	// ended, by the time each statement started.
	accepted, refused, terminated := lateStatements(filepath.Join(*dir, "pg.log"), leases)
	// Sessions of an expired owner still on the server at the end.
	var lost []string
	for _, l := range leases {
		if l.lost {
			lost = append(lost, fmt.Sprintf("clawkit-owner-%d", l.inc))
		}
	}
	var left int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = ANY($1)`, lost).Scan(&left); err != nil {
		die("%v", err)
	}
	lateCell := fmt.Sprintf("%d / %d (%d backends terminated, %d left)", accepted, refused, terminated, left)
	if accepted > 0 || left > 0 {
		lateCell += " FAIL"
	}

	// Takeover.
	takeCell := "–"
	if strings.HasPrefix(*kind, "prov") {
		// The cut-off gateway's own log says when it stopped claiming.
		if t := logTime(filepath.Join(*dir, "g1.log"), "stops claiming research jobs"); t > 0 && cutAt > 0 {
			takeCell = fmt.Sprintf("%.1f s (stopped claiming)", float64(t-cutAt)/1000)
		}
	} else if v := events["takeover"]; v != "" && v != "-" {
		ms, _ := strconv.ParseInt(v, 10, 64)
		takeCell = fmt.Sprintf("%.1f s", float64(ms)/1000)
		if ms > 15000 {
			takeCell += " FAIL"
		}
	}

	// Longest gap between two polls of one job.
	bound := 2**interval + *ttl
	var gap int64
	for _, ts := range polls {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		for i := 1; i < len(ts); i++ {
			gap = max(gap, ts[i]-ts[i-1])
		}
	}
	gapCell := fmt.Sprintf("%.1f s (%.0f s)", float64(gap)/1000, bound.Seconds())
	if time.Duration(gap)*time.Millisecond > bound {
		gapCell += " FAIL"
	}

	// CLI calls during the cut: exit code, seconds, retryAfterMs present.
	cliCell := "–"
	if b, err := os.ReadFile(filepath.Join(*dir, "cli")); err == nil {
		var parts []string
		bad := false
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			if len(f) != 4 {
				continue
			}
			ms, _ := strconv.Atoi(f[2])
			retry := "no retryAfterMs"
			if f[3] != "0" {
				retry = "retryAfterMs"
			}
			parts = append(parts, fmt.Sprintf("%s %s·%.1f·%s", f[0], f[1], float64(ms)/1000, retry))
			if f[1] != "5" || f[3] == "0" || ms > 5000 {
				bad = true
			}
		}
		sort.Strings(parts)
		cliCell = strings.Join(parts, ", ")
		if bad {
			cliCell += " FAIL"
		}
	}

	// The cut-off gateway's exits (a supervisor restarts it on failure).
	target := strings.Fields(events["target"])
	exitsCell := "–"
	if len(target) > 0 {
		if b, err := os.ReadFile(filepath.Join(*dir, target[0]+".exits")); err == nil {
			var codes []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if f := strings.Fields(l); len(f) == 2 {
					codes = append(codes, f[1])
				}
			}
			exitsCell = target[0] + ": " + strings.Join(codes, ", ")
			lost := false
			for _, l := range leases {
				if l.gw == target[0] && l.lost {
					lost = true
				}
			}
			if lost && (len(codes) == 0 || codes[0] == "0") {
				exitsCell += " FAIL (retired with status 0)"
			}
		}
	}
	fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", *name, len(creates), createsCell, lateCell, leaseCell, takeCell, gapCell, cliCell, exitsCell)
}

func readLeases(ctx context.Context, c *pgx.Conn, dir string) []lease {
	rows, err := c.Query(ctx, `SELECT incarnation, home, started_at, lease_expires_at, coalesce(stopped_at, '') FROM owners WHERE kind = 'gateway'`)
	if err != nil {
		die("%v", err)
	}
	defer rows.Close()
	var out []lease
	for rows.Next() {
		var l lease
		var home, started, stopped string
		var exp int64
		if err := rows.Scan(&l.inc, &home, &started, &exp, &stopped); err != nil {
			die("%v", err)
		}
		l.gw = filepath.Base(home)
		if t, err := time.Parse(time.RFC3339Nano, started); err == nil {
			l.start = t.UnixMilli()
		}
		l.end = exp
		if t, err := time.Parse(time.RFC3339Nano, stopped); err == nil && stopped != "" {
			l.end = t.UnixMilli()
		} else {
			l.lost = true
		}
		out = append(out, l)
	}
	return out
}

var (
	logLine  = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[\d+\] app=(\S*) code=(\S+) (\w+):\s+(.*)$`)
	duration = regexp.MustCompile(`^duration: ([0-9.]+) ms\s+(parse|bind|execute|statement)`)
)

// lateStatements counts, for owners whose lease ended, the statements
// that completed (accepted) and the errors (refused) logged under their
// application_name after the end.
func lateStatements(path string, leases []lease) (accepted, refused, terminated int) {
	// Only leases that ended by expiry: a clean stop's own release is the
	// end of its lease, not a late statement.
	end := map[string]int64{}
	for _, l := range leases {
		if l.lost {
			end[fmt.Sprintf("clawkit-owner-%d", l.inc)] = l.end
		}
	}
	forLines(path, func(line string) {
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		e, ok := end[m[2]]
		if !ok {
			return
		}
		t, err := time.Parse("2006-01-02 15:04:05.000", m[1])
		if err != nil {
			return
		}
		at := t.UnixMilli()
		switch {
		case m[4] == "LOG":
			d := duration.FindStringSubmatch(m[5])
			if len(d) < 3 || (d[2] != "execute" && d[2] != "statement") {
				return
			}
			ms, _ := strconv.ParseFloat(d[1], 64)
			if at-int64(ms) > e {
				accepted++
				if os.Getenv("PARTITION_VERBOSE") != "" {
					fmt.Fprintf(os.Stderr, "late accepted (lease ended %d): %s\n", e, line)
				}
			}
		case m[3] == "57P01":
			if at > e {
				terminated++
			}
		case m[4] == "ERROR" || m[4] == "FATAL":
			if at > e {
				refused++
			}
		}
	})
	return accepted, refused, terminated
}

func logTime(path, substr string) int64 {
	var at int64
	forLines(path, func(line string) {
		if at != 0 || !strings.Contains(line, substr) {
			return
		}
		if i := strings.Index(line, "time="); i >= 0 {
			f := strings.Fields(line[i+5:])
			if len(f) > 0 {
				if t, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
					at = t.UnixMilli()
				}
			}
		}
	})
	return at
}

func readEvents(path string) map[string]string {
	out := map[string]string{}
	forLines(path, func(line string) {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k] = v
		}
	})
	return out
}

func forLines(path string, f func(string)) {
	fh, err := os.Open(path)
	if err != nil {
		return
	}
	defer fsx.CloseRead(fh)
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f(sc.Text())
	}
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "partitionreport: "+format+"\n", args...)
	os.Exit(1)
}
