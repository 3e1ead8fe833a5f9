package testscript

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

// The PostgreSQL commands of the pg_*.txtar scripts: each opens its own
// connection to the script's database ($PGURL, set by pgSetup) and closes
// it before it returns, so nothing outlives the command.

// pgStatementLimit bounds one statement: a server that stops answering
// fails the script instead of hanging it.
const pgStatementLimit = 30 * time.Second

// pgConn connects to $PGURL; the connection is closed when the command
// ends (ts.Defer would keep it to the end of the script).
func pgConn(ts *testscript.TestScript) (*pgx.Conn, func()) {
	u := ts.Getenv("PGURL")
	if u == "" {
		ts.Fatalf("no $PGURL: only pg_*.txtar scripts get a database")
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgStatementLimit)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		ts.Fatalf("connect: %v", err)
	}
	return c, func() { _ = c.Close(context.Background()) } // a probe connection: nothing to lose
}

// pg-query SQL: prints each row of SQL's result, columns separated by
// spaces.
func cmdPGQuery(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pg-query SQL")
	}
	c, closeConn := pgConn(ts)
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), pgStatementLimit)
	defer cancel()
	rows, err := c.Query(ctx, args[0])
	if err != nil {
		ts.Fatalf("pg-query: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			ts.Fatalf("pg-query: %v", err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		if _, err := fmt.Fprintln(ts.Stdout(), strings.Join(parts, " ")); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	if err := rows.Err(); err != nil {
		ts.Fatalf("pg-query: %v", err)
	}
}

// pgCount is the single number SQL returns.
func pgCount(ts *testscript.TestScript, c *pgx.Conn, sql string, args ...any) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), pgStatementLimit)
	defer cancel()
	var n int64
	if err := c.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		ts.Fatalf("%s: %v", sql, err)
	}
	return n
}

// await-pg-count N SQL: waits until the single number SQL returns equals
// N; prints how long it took. The scale scripts wait longer than the
// other awaits (hundreds of jobs on 2 shared cores).
func cmdAwaitPGCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: await-pg-count N SQL")
	}
	want, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		ts.Fatalf("await-pg-count: bad N %q", args[0])
	}
	c, closeConn := pgConn(ts)
	defer closeConn()
	start := time.Now()
	limit := 3 * time.Minute
	for {
		n := pgCount(ts, c, args[1])
		if n == want {
			if _, err := fmt.Fprintln(ts.Stdout(), "reached", want, "after", time.Since(start).Round(time.Millisecond)); err != nil {
				ts.Fatalf("%v", err)
			}
			return
		}
		if time.Since(start) > limit {
			ts.Fatalf("%s is %d, not %d, after %s", args[1], n, want, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// await-lease-gone OWNERID: waits until the owner's lease is no longer
// live (stopped, or expired by the database's clock), then prints how long
// it took.
func cmdAwaitLeaseGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || args[0] == "" {
		ts.Fatalf("usage: await-lease-gone OWNERID")
	}
	c, closeConn := pgConn(ts)
	defer closeConn()
	start := time.Now()
	await(ts, 50*time.Millisecond, func() (bool, string) {
		n := pgCount(ts, c, `SELECT count(*) FROM owners WHERE owner_id = $1 AND stopped_at IS NULL
 AND lease_expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint`, args[0])
		if n == 0 {
			_, _ = fmt.Fprintln(ts.Stdout(), "lease gone after", time.Since(start).Round(time.Millisecond)) // the script's stdout buffer: cannot fail
			return true, ""
		}
		return false, fmt.Sprintf("lease of %s still live", args[0])
	})
}
