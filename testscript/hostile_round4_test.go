package testscript

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
	"github.com/clawkit/clawkit/pkg/owner"
)

// round4HostileCases are hardening round 4's findings (docs/errors.md):
// a hostile gateway's status on a terminal, a unix socket as an input
// file, and listen ports out of range (usage errors before anything binds).
func round4HostileCases() []hostileCase {
	return []hostileCase{
		// `gateway status --gateway` shows what any process on that socket
		// answers: every string is escaped (human: no raw control byte).
		{name: "r4/gateway-status-hostile-owner", setup: hostileGateway, args: []string{"--gateway", "unix:$W/g.sock", "gateway", "status"}, exit: 0, human: true},
		{name: "r4/gateway-status-hostile-owner-json", setup: hostileGateway, args: []string{"--gateway", "unix:$W/g.sock", "gateway", "status"}, exit: 0, has: `\u001b]0;pwned\u0007`},

		// A unix socket given as an input file is not_regular_file (exit
		// 2), as a FIFO is, not a failed read.
		{name: "r4/socket-skill-write-from-bundle", setup: withSocket("in.tar"), args: []string{"skill", "write", "s", "--plugin", "p", "--from-bundle", "$W/in.tar"}, exit: 2, code: "not_regular_file"},
		{name: "r4/socket-skill-write-from", setup: withSocket("in.md"), args: []string{"skill", "write", "s", "SKILL.md", "--plugin", "p", "--from", "$W/in.md"}, exit: 2, code: "not_regular_file"},

		// Ports out of range, other networks: usage errors, exit 2,
		// before anything binds or the home exists.
		{name: "r4/listen-port-70000", args: []string{"mcp", "proxy", "--listen", "127.0.0.1:70000", "--", "true"}, exit: 2, code: "invalid_listen"},
		{name: "r4/listen-port-negative", args: []string{"mcp", "proxy", "--listen", "127.0.0.1:-1", "--", "true"}, exit: 2, code: "invalid_listen"},
		{name: "r4/listen-unix", args: []string{"mcp", "proxy", "--listen", "unix:$W/p.sock", "--", "true"}, exit: 2, code: "invalid_listen"},
		{name: "r4/listen-service-name", args: []string{"mcp", "proxy", "--listen", "127.0.0.1:http", "--", "true"}, exit: 2, code: "invalid_listen"},
		{name: "r4/metrics-port-negative", args: []string{"gateway", "run", "--metrics-listen", "127.0.0.1:-1"}, exit: 2, code: "invalid_metrics_listen"},
		{name: "r4/metrics-port-70000-detach", args: []string{"gateway", "run", "--detach", "--metrics-listen", "127.0.0.1:70000"}, exit: 2, code: "invalid_metrics_listen"},
		{name: "r4/metrics-unix", args: []string{"gateway", "run", "--metrics-listen", "unix:$W/m.sock"}, exit: 2, code: "invalid_metrics_listen"},

		// A research job that stops for plan review: exit 5, and the error
		// document carries the job id as a field (no message parsing).
		{name: "r4/start-plan-wait-job-id", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--plan", "--wait", "q"}, exit: 5, code: "plan_proposed", has: `"jobId": "rj_`},

		// crabbox install --node-archive/--worker-archive: checked as the
		// archives beside the manifest are (nothing installed).
		{name: "r4/crabbox-node-archive-fifo", setup: archiveExport("n", "FIFO"), args: crabboxArchiveArgs("--node-archive", "$W/n"), exit: 1, code: "archive_unreadable"},
		{name: "r4/crabbox-node-archive-dir", setup: archiveExport("n", "DIR"), args: crabboxArchiveArgs("--node-archive", "$W/n"), exit: 1, code: "archive_unreadable"},
		{name: "r4/crabbox-node-archive-link", setup: archiveExport("n", "LINK"), args: crabboxArchiveArgs("--node-archive", "$W/n"), exit: 1, code: "archive_unreadable"},
		{name: "r4/crabbox-worker-archive-wrong", setup: archiveExport("n", "junk"), args: crabboxArchiveArgs("--worker-archive", "$W/n"), exit: 1, code: "integrity_verification_failed"},
		{name: "r4/crabbox-worker-archive-missing", setup: archiveExport("", ""), args: crabboxArchiveArgs("--worker-archive", "$W/none"), exit: 1, code: "archive_missing"},
	}
}

func crabboxArchiveArgs(flag, path string) []string {
	return []string{"crabbox", "install", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t", flag, path}
}

// archiveExport writes a correct export to $W/x and, at $W/name, a FIFO, a
// folder, a link to the export's own node archive (LINK), or a file.
func archiveExport(name, what string) func(t *testing.T, w string) {
	return func(t *testing.T, w string) {
		mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version))
		if err != nil {
			t.Fatal(err)
		}
		if what == "LINK" {
			m, _, err := artifacts.LoadManifest(mp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(w, "x", filepath.FromSlash(m.NodeBootstrap.Path)), filepath.Join(w, name)); err != nil {
				t.Fatal(err)
			}
			return
		}
		if name != "" {
			files(name, what)(t, w)
		}
	}
}

// hostileGateway serves, on $W/g.sock, a gateway status whose strings
// carry terminal escapes (a window title, a bell, colour) until the case
// ends.
func hostileGateway(t *testing.T, w string) {
	l, err := net.Listen("unix", filepath.Join(w, "g.sock"))
	if err != nil {
		t.Fatal(err)
	}
	evil := "\x1b]0;pwned\x07\x1b[31mred\x1b[0m"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(rw http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(rw).Encode(owner.Status{ // a write error: the client went away
			OwnerID: evil, PID: 1, Socket: evil, Version: evil, Engine: evil, StartedAt: time.Unix(0, 0),
			Detail: &owner.StatusDetail{Ready: true, Lease: owner.LeaseInfo{State: evil}, Jobs: map[string]int{evil: 1}},
		})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }() // ends at the Close below
	t.Cleanup(func() { _ = srv.Close() })
}

// withSocket is withPlugin with a unix socket (bound, listening) at name.
func withSocket(name string) func(t *testing.T, w string) {
	return func(t *testing.T, w string) {
		withPlugin()(t, w)
		l, err := net.Listen("unix", filepath.Join(w, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
	}
}
