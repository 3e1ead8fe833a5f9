package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Postgres is the configured engine (docs/scale-out.md): several gateways on
// several hosts share one PostgreSQL database.
//
// The password never comes from config.json: pgx applies the libpq
// conventions (PGPASSWORD, PGPASSFILE or ~/.pgpass) when the URL has none,
// and Password (a "database" entry in credentials.json) fills in when those
// give nothing either.
type Postgres struct {
	URL      string
	Password string
	// incarnation, once a lease is held, is written into every pooled
	// connection's session (clawkit.owner_incarnation) so that the lease
	// trigger checks every write against this owner's lease in the same
	// transaction.
	incarnation atomic.Int64

	pool *pgxpool.Pool

	roundTrips atomic.Int64

	net netState
}

// RoundTrips is how many requests this engine's connections sent to the
// server (for benchmarks: database round trips per poll).
func (e *Postgres) RoundTrips() int64 { return e.roundTrips.Load() }

// rtCounter counts round trips: every query or statement (BEGIN and COMMIT
// included), every prepare, and a batch once.
type rtCounter struct{ n *atomic.Int64 }

func (c rtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (rtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c rtCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (rtCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
func (c rtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (rtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (rtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// Name implements Engine.
func (*Postgres) Name() string { return "postgres" }

// Rebind implements Engine: ? placeholders become $1, $2, … (outside
// quoted literals and identifiers).
func (*Postgres) Rebind(q string) string { return rebindDollar(q) }

func rebindDollar(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteString(fmt.Sprintf("$%d", n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// poolConfig parses the URL and resolves the password.
func (e *Postgres) poolConfig() (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(e.URL)
	if err != nil {
		// The parse error may quote the URL; say only what is wrong.
		return nil, errs.Usage(CodeInvalidDatabaseUrl, "database.url is not a valid PostgreSQL URL: %s", redact(err.Error(), e.URL, e.Password)).
			WithHint("use postgres://USER@HOST:PORT/DBNAME?sslmode=… (the password goes in PGPASSWORD, ~/.pgpass or credentials.json)")
	}
	if cfg.ConnConfig.Password == "" && e.Password != "" {
		cfg.ConnConfig.Password = e.Password
	}
	// A gateway needs few connections (river's listener and fetcher, its
	// workers, the request handlers); many gateways share one server's
	// max_connections (100 by default).
	cfg.MaxConns = 10
	e.applyNetConfig(cfg.ConnConfig)
	cfg.ShouldPing = e.shouldPing
	cfg.PingTimeout = pingTimeout
	cfg.ConnConfig.Tracer = connTracer{rtCounter: rtCounter{n: &e.roundTrips}, e: e}
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		if inc := e.incarnation.Load(); inc > 0 {
			cc.RuntimeParams["application_name"] = ApplicationName(inc)
		}
		return nil
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if inc := e.incarnation.Load(); inc > 0 {
			_, err := c.Exec(ctx, fmt.Sprintf("SET clawkit.owner_incarnation = '%d'", inc))
			return err
		}
		return nil
	}
	return cfg, nil
}

func cmpDuration(v, d time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return d
}

// Pool returns the pgx pool behind the last Open (river works on it).
func (e *Postgres) Pool() *pgxpool.Pool { return e.pool }

// Open implements Engine. A server that cannot be reached is temporary
// (exit 5) and the message is the server's, without any secret.
func (e *Postgres) Open(ctx context.Context) (*sql.DB, error) {
	cfg, err := e.poolConfig()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, e.connErr(err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, e.connErr(err)
	}
	e.pool = pool
	db := stdlib.OpenDBFromPool(pool)
	return db, nil
}

// connErr classifies a connection failure: the server's refusal of our
// credentials is exit 3; anything else (down, unreachable, starting) is
// temporary, exit 5.
func (e *Postgres) connErr(err error) error {
	msg := redact(err.Error(), e.URL, e.Password)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") {
		return errs.Refused(CodeDatabaseAuthFailed, "PostgreSQL refused the connection: %s", msg).
			WithHint("supply the password through PGPASSWORD, PGPASSFILE/~/.pgpass or a database entry in credentials.json (never in config.json)")
	}
	if errors.As(err, &pe) && pe.Code == "3D000" {
		return errs.Failed(CodeDatabaseMissing, "PostgreSQL: %s", msg).WithHint("create the database first (createdb), then run 'clawkit state migrate'")
	}
	return errs.Unavailable(CodeDatabaseUnavailable, "cannot connect to PostgreSQL: %s", msg).
		WithRetryAfter(5000).WithHint("check that the server at database.url (or CLAWKIT_DATABASE_URL) is running and reachable")
}

// redact removes the password (and a URL that may carry one) from a message.
func redact(msg, rawURL, password string) string {
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return msg
}

// Exists implements Engine: the schema exists when the meta table does. A
// server that cannot be reached is reported as an error, never as "absent".
func (e *Postgres) Exists(ctx context.Context) (bool, error) {
	db, err := e.Open(ctx)
	if err != nil {
		return false, err
	}
	defer db.Close()
	return tableExists(ctx, db, e, "meta")
}

// Backup implements Engine: a PostgreSQL database is backed up with the
// server's own tools.
func (e *Postgres) Backup(ctx context.Context, db *sql.DB, path string, _ func() error) error {
	return errs.Refused(CodeBackupUnsupported, "state backup writes SQLite copies; this home uses PostgreSQL").
		WithHint("back PostgreSQL up with pg_dump (e.g. pg_dump --format=custom --file=FILE DBNAME) or your server's backup tooling")
}

// tableExists asks the engine's catalogue whether a table exists.
func tableExists(ctx context.Context, db *sql.DB, e Engine, name string) (bool, error) {
	var n int
	var err error
	if _, ok := e.(*Postgres); ok {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, name).Scan(&n)
	} else {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?`, name).Scan(&n)
	}
	return n > 0, err
}

// IsPostgres reports whether e is the PostgreSQL engine.
func IsPostgres(e Engine) bool { _, ok := e.(*Postgres); return ok }

// advisoryKey is the pg_advisory_lock key that serialises schema changes
// across hosts ("clawkit" in ASCII).
const advisoryKey = 0x636c61776b6974

// withMigrationLock runs f while holding the cross-host migration lock
// (PostgreSQL) on a dedicated connection; on SQLite the owner lock already
// serialises it.
func withMigrationLock(ctx context.Context, db *sql.DB, e Engine, f func() error) error {
	if !IsPostgres(e) {
		return f()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return errs.Unavailable(CodeDatabaseUnavailable, "cannot connect to PostgreSQL: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryKey)); err != nil {
		return errs.Unavailable(CodeMigrationLockFailed, "cannot take the migration lock: %v", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(advisoryKey))
	return f()
}

// Incarnation is the owner lease this engine's connections write under
// (0 before a lease is taken).
func (e *Postgres) Incarnation() int64 { return e.incarnation.Load() }
