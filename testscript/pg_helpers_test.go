package testscript

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/riversched"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// PostgreSQL scripts (pg_*.txtar) start with `[!pg] skip`: the condition
// holds when a server answers ($CLAWKIT_TEST_DATABASE_URL, else
// 127.0.0.1:5432); in CI a missing server fails instead. Each script gets
// a database of its own, dropped afterwards, as $PGURL (no password in it),
// and its own fake Interactions API like the research scripts.
func pgKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"signal-gateway":      signalGateway,
			"bench-seed-research": benchSeedResearch,
			"pg-proxy":            pgProxy,
			"pg-cut-proxy":        pgCutProxy,
		},
		conditions: map[string]func() (bool, error){
			"pg": func() (bool, error) {
				u, err := pgAdmin()
				return u != "", err
			},
			"partition": partitionCondition,
		},
		setups: []func(*testscript.Env) error{
			pgSetup,
			partitionSetup,
		},
	}
}

// signal-gateway HOME STOP|CONT|KILL: signals the home's gateway (from its
// record) and prints its pid and owner id.
func signalGateway() {
	if len(os.Args) != 3 {
		die("usage: signal-gateway HOME STOP|CONT|KILL")
	}
	rec, err := owner.ReadRecord(owner.Home{Dir: os.Args[1]})
	if err != nil || rec == nil {
		die("no gateway record in %s", os.Args[1])
	}
	sig := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "KILL": syscall.SIGKILL}[os.Args[2]]
	if sig == 0 {
		die("unknown signal %s", os.Args[2])
	}
	if err := syscall.Kill(rec.PID, sig); err != nil {
		die("%v", err)
	}
	fmt.Println(rec.PID, rec.OwnerID)
}

var pgAdmin = sync.OnceValues(pgtest.AdminURL)

func pgSetup(env *testscript.Env) error {
	n, ok := env.T().(interface{ Name() string })
	if !ok || !strings.Contains(n.Name(), "/pg_") {
		return nil
	}
	admin, err := pgAdmin()
	if err != nil || admin == "" {
		return nil // the script's [!pg] skip (or the condition's error) decides
	}
	u, drop, err := pgtest.CreateDB(admin, "clawkit_ts")
	if err != nil {
		return err
	}
	env.Defer(drop)
	env.Setenv("PGURL", u)
	return startFakeGoogle(env)
}

// bench-seed-research HOME N PREFIX: starts N research jobs in-process on
// HOME's configured store (16 at a time), with questions "PREFIX i". For
// scripts/bench-scale.sh: 10,000 starts through the CLI would take minutes.
func benchSeedResearch() {
	if len(os.Args) != 4 {
		die("usage: bench-seed-research HOME N PREFIX")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		die("bad N: %v", err)
	}
	ctx := context.Background()
	h := owner.Home{Dir: os.Args[1]}
	st, err := owner.OpenStore(ctx, h, false)
	if err != nil {
		die("%v", err)
	}
	defer st.Close()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	svc := &research.Service{Shared: riversched.New()} // wired as the registry wires it (pkg/ops)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			// One Env per start, as the router gives every operation: an
			// Env accumulates the session checks of what it bound, so
			// sharing one made each start re-check every earlier session
			// (quadratic: 10,000 SQLite starts slowed to ~1 per second).
			env := owner.NewOpEnv(h.Dir, st, func() error { return nil }, time.Now, nil, false)
			if _, err := svc.Start(ctx, env, research.StartParams{Question: fmt.Sprintf("%s %d", os.Args[3], i)}); err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if failed != nil {
		die("%v", failed)
	}
}

// partitionCondition: the partition scripts (pg_partition*.txtar) need
// root (network namespaces), iproute2 and Debian's PostgreSQL binaries
// for a cluster of their own (scripts/partition-test.sh).
func partitionCondition() (bool, error) {
	if os.Geteuid() != 0 {
		return false, nil
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false, nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	return len(m) > 0, nil
}

// partitionSetup hands the partition scripts the Go toolchain's own
// caches (the script builds its small helpers; a script's HOME is its
// work directory, where a cold cache would rebuild everything).
func partitionSetup(env *testscript.Env) error {
	n, ok := env.T().(interface{ Name() string })
	if !ok || !strings.Contains(n.Name(), "/pg_partition") {
		return nil
	}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil // the script's own build then says what is missing
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) == 3 {
		env.Setenv("GOCACHE", v[0])
		env.Setenv("GOMODCACHE", v[1])
		env.Setenv("GOPATH", v[2])
		env.Setenv("GOFLAGS", "-mod=readonly")
		env.Setenv("GOPROXY", "off")
	}
	return nil
}

// pg-proxy URLFILE: forwards a loopback port to $PGURL's server and writes
// $PGURL with the proxy's address to URLFILE; killing it stands in for a
// server that went away (connections reset, new ones refused).
func pgProxy() {
	if len(os.Args) != 2 {
		die("usage: pg-proxy URLFILE")
	}
	u, err := url.Parse(os.Getenv("PGURL"))
	if err != nil {
		die("%v", err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		die("%v", err)
	}
	u.Host = ln.Addr().String()
	if err := os.WriteFile(os.Args[1], []byte(u.String()+"\n"), 0o644); err != nil {
		die("%v", err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			die("%v", err)
		}
		go func() {
			defer c.Close()
			s, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer s.Close()
			go io.Copy(s, c)
			io.Copy(c, s)
		}()
	}
}

// pg-cut-proxy URLFILE PATTERN LOGFILE CUT: forwards a loopback port to
// $PGURL's server (pgtest.CutProxy) and writes $PGURL with the proxy's
// address to URLFILE. The first client message holding PATTERN reaches
// the server, and its answer is cut as CUT says (no-reply,
// fatal-mid-reply); LOGFILE gets a line "seen" for every message holding
// PATTERN (a replayed statement is a second one) and "cut" at the cut.
// A real process: clawkit's connections to it are real TCP connections.
func pgCutProxy() {
	if len(os.Args) != 5 {
		die("usage: pg-cut-proxy URLFILE PATTERN LOGFILE CUT")
	}
	tail := pgtest.Cuts[os.Args[4]]
	if tail == nil {
		die("pg-cut-proxy: unknown cut %q", os.Args[4])
	}
	u, err := url.Parse(os.Getenv("PGURL"))
	if err != nil {
		die("%v", err)
	}
	logf, err := os.OpenFile(os.Args[3], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		die("%v", err)
	}
	var mu sync.Mutex
	logLine := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(logf, s)
		logf.Sync()
	}
	p, err := pgtest.StartCutProxy(u.Host, os.Args[2], tail)
	if err != nil {
		die("%v", err)
	}
	p.OnSeen = func() { logLine("seen") }
	p.OnCut = func() { logLine("cut") }
	purl, err := p.URL(os.Getenv("PGURL"))
	if err != nil {
		die("%v", err)
	}
	if err := os.WriteFile(os.Args[1], []byte(purl+"\n"), 0o644); err != nil {
		die("%v", err)
	}
	select {} // until killed
}
