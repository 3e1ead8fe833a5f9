package testscript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	return []hostileCase{
		// Exit 0 for nothing: a job that ends without a report is exit 1,
		// --out is never written.
		{name: "r3/start-wait-empty-report-out", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:steps-empty q", "--out", "$W/r.md"}, exit: 1, code: "no_report"},
		{name: "r3/start-wait-legacy-outputs", fake: true, homeRecords: true, setup: researchReady(),
			args: []string{"research", "start", "--wait", "fake:legacy-outputs q"}, exit: 1, code: "no_report"},
	}
}
