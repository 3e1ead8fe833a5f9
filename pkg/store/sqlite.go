package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// SQLite is the embedded default engine.
type SQLite struct {
	// Path is the database file; ":memory:" gives a private in-memory
	// database (used for read-only commands on a home that has no state).
	Path string
}

// DBFileName is the database's name inside the home.
const DBFileName = "state.db"

// Name implements Engine.
func (SQLite) Name() string { return "sqlite" }

// Rebind implements Engine: SQLite takes ? as is.
func (SQLite) Rebind(q string) string { return q }

// Exists implements Engine.
func (e SQLite) Exists(context.Context) (bool, error) {
	if e.Path == ":memory:" {
		return false, nil
	}
	_, err := os.Stat(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Open implements Engine. WAL lets readers proceed while the owner writes;
// busy_timeout absorbs the short waits WAL still has; foreign keys are on
// because SQLite defaults them off.
func (e SQLite) Open(ctx context.Context) (*sql.DB, error) {
	if err := checkDBFiles(e.Path); err != nil {
		return nil, err
	}
	dsn := "file:" + e.Path + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_txlock=immediate"
	if e.Path != ":memory:" {
		dsn += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, errs.Failed(CodeStoreOpenFailed, "cannot open %s: %v", e.Path, err)
	}
	if e.Path == ":memory:" {
		// Each connection of :memory: is its own database: keep one.
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close() // the ping's error is the one to report
		return nil, errs.Failed(CodeStoreOpenFailed, "cannot open %s: %v", e.Path, err)
	}
	return db, nil
}

// Backup implements Engine with VACUUM INTO a temporary sibling, then an
// atomic rename: the copy is transactionally consistent and a crash never
// leaves a partial file at path.
func (e SQLite) Backup(ctx context.Context, db *sql.DB, path string, beginWrite func() error) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return errs.Failed(CodeBackupExists, "%s already exists", path).WithHint("choose a new file name or remove the old backup")
	}
	tmp, err := fsx.TempSibling(path, 0o600)
	if err != nil {
		return errs.Failed(errs.CodeBackupFailed, "cannot create a backup next to %s: %v", path, err)
	}
	name := tmp.Name()
	fsx.CloseRead(tmp)                      // empty: nothing was written
	if err := os.Remove(name); err != nil { // VACUUM INTO wants to create the file itself
		return errs.Failed(errs.CodeBackupFailed, "backup failed: %v", err)
	}
	defer func() {
		// Published (linked) or not, the temporary name goes.
		if rerr := os.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, errs.Failed(errs.CodeBackupFailed, "cannot remove %s: %v", name, rerr))
		}
	}()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, name); err != nil {
		return errs.Failed(errs.CodeBackupFailed, "backup failed: %v", err)
	}
	if err := os.Chmod(name, 0o600); err != nil {
		return errs.Failed(errs.CodeBackupFailed, "backup failed: %v", err)
	}
	// The write fence (nil: none) immediately before the publication.
	if beginWrite != nil {
		if err := beginWrite(); err != nil {
			return err
		}
	}
	// Link, not rename: refuses to replace a file created meanwhile.
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.Failed(CodeBackupExists, "%s already exists", path).WithHint("choose a new file name or remove the old backup")
		}
		return errs.Failed(errs.CodeBackupFailed, "cannot publish %s: %v", path, err)
	}
	return fsx.SyncDir(filepath.Dir(path))
}

// checkDBFiles refuses a database whose file, or one of SQLite's sibling
// files, exists but is not a regular file (a FIFO would hang the open, a
// device would be read without end): the home's files are regular files
// (README, "The home"). A link to a regular file is accepted.
func checkDBFiles(path string) error {
	if path == ":memory:" {
		return nil
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errs.Failed(CodeStoreOpenFailed, "cannot open %s: %v", path, err)
		}
		if !st.Mode().IsRegular() {
			return errs.Failed(CodeStoreOpenFailed, "cannot open %s: %s is not a regular file (mode %s)", path, p, st.Mode().Type()).
				WithHint("move %s away; the database must be a regular file", p)
		}
	}
	return nil
}
