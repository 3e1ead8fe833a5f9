package store_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// A statement whose connection drops while its answer is awaited is never
// replayed by database/sql: the server saw it once and the caller gets an
// error. Before pgx 5.13.0 a connection closed while the answer of a
// simple-protocol statement (any Exec without arguments, and every COMMIT)
// was read counted as "safe to retry", and database/sql ran the statement
// again on a new connection: on pgx 5.12.0 the no-reply case without
// arguments wrote its row twice.
func TestStatementCutMidReplyIsNotReplayed(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, _ := url.Parse(dbURL)
	ctx := context.Background()
	setup := &store.Postgres{URL: dbURL}
	db, err := setup.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE cut_probe (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	for name, tail := range pgtest.Cuts {
		for _, withArgs := range []bool{false, true} {
			id := fmt.Sprintf("%s-%v", name, withArgs)
			t.Run(id, func(t *testing.T) {
				// The statement's own value marks it: in the query text
				// (simple protocol) or in its Bind message (extended), so
				// the cut falls on its execution, never on a prepare.
				p, err := pgtest.StartCutProxy(u.Host, id, tail)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				purl, _ := p.URL(dbURL)
				e := &store.Postgres{URL: purl}
				pdb, err := e.Open(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer pdb.Close()
				if withArgs {
					_, err = pdb.ExecContext(ctx, `INSERT INTO cut_probe (id) VALUES ($1)`, id)
				} else {
					_, err = pdb.ExecContext(ctx, `INSERT INTO cut_probe (id) VALUES ('`+id+`')`)
				}
				if !p.Cut() {
					t.Fatal("the proxy never cut the answer")
				}
				var rows int
				if qerr := db.QueryRowContext(ctx, `SELECT count(*) FROM cut_probe WHERE id = $1`, id).Scan(&rows); qerr != nil {
					t.Fatal(qerr)
				}
				// Whether the server committed it is for the caller to find
				// out (its error says the outcome is unknown); twice, never.
				if n := p.Seen(); n != 1 || rows > 1 {
					t.Fatalf("the statement reached the server %d times and wrote %d rows: database/sql replayed it (error %v)", n, rows, err)
				}
				if err == nil {
					t.Fatal("a statement whose answer was cut reported success")
				}
			})
		}
	}
}
