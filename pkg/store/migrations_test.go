package store

import "testing"

// TestMigrationsListed: the explicit list (migrations) holds every domain's
// steps once, in strictly increasing version order, with SQL for each
// engine, and LatestVersion is its last.
func TestMigrationsListed(t *testing.T) {
	ms := Migrations()
	if len(ms) == 0 {
		t.Fatal("no migrations")
	}
	for _, want := range []int{1, 10, 20, 30, 32, 33} {
		found := false
		for _, m := range ms {
			found = found || m.Version == want
		}
		if !found {
			t.Errorf("migration %d (a domain's first step) is not listed", want)
		}
	}
	for i, m := range ms {
		if i > 0 && ms[i-1].Version >= m.Version {
			t.Errorf("migration %d (%s) after %d (%s)", m.Version, m.Name, ms[i-1].Version, ms[i-1].Name)
		}
		if m.Name == "" || (m.SQL == "" && m.Postgres == "") {
			t.Errorf("migration %d has no name or no SQL", m.Version)
		}
	}
	if LatestVersion() != ms[len(ms)-1].Version {
		t.Errorf("LatestVersion %d, last migration %d", LatestVersion(), ms[len(ms)-1].Version)
	}
}
