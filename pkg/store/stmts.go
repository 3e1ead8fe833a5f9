package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache holds a store's prepared statements, so hot queries (the
// research poller's get and update) are prepared once per open database,
// not once per call, and are closed with it. Gated views share it.
type stmtCache struct {
	m sync.Map // query text (rebound) → *sql.Stmt
}

// Prepared returns query (written with ? placeholders) prepared on this
// store's database, preparing it on first use. The statement belongs to
// the store: callers never close it; Close does.
func (s *Store) Prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	q := s.Rebind(query)
	if v, ok := s.stmts.m.Load(q); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if v, loaded := s.stmts.m.LoadOrStore(q, st); loaded {
		// Another caller prepared it first; this one was never used.
		_ = st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

func (c *stmtCache) close() {
	c.m.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close() // the store is closing: closing the *sql.DB frees them anyway
		c.m.Delete(k)
		return true
	})
}
