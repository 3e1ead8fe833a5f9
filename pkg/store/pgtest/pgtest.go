// Package pgtest gives tests a private PostgreSQL database.
//
// The server is $CLAWKIT_TEST_DATABASE_URL, else the project machines'
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable when it
// answers. Each call creates a fresh database and drops it when the test
// ends. Without a server the test is skipped locally and fails in CI (env
// CI set): .ci/run starts one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the admin URL of the test server.
const EnvURL = "CLAWKIT_TEST_DATABASE_URL"

// DefaultURL is the server the project's machines run.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// TB is the part of testing.TB this package needs.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// AdminURL returns the server's URL and whether it answers; in CI a server
// that does not answer is an error.
func AdminURL() (string, error) {
	u := os.Getenv(EnvURL)
	if u == "" {
		u = DefaultURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("CI") != "" {
			return "", fmt.Errorf("PostgreSQL at %s does not answer (%w); .ci/run starts one", redactURL(u), err)
		}
		return "", nil
	}
	// A probe that wrote nothing: its close error cannot matter.
	_ = c.Close(ctx)
	return u, nil
}

// CreateDB creates a fresh database on the server at admin and returns its
// URL and a function that drops it.
func CreateDB(admin, prefix string) (string, func() error, error) {
	var b [6]byte
	rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = c.Close(context.Background()) }() // the CREATE reported its own error
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close(context.Background()) }() // the DROP reports its own error
		_, err = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		return err
	}
	return u.String(), drop, nil
}

// URL returns the URL of a fresh database for t, dropped at cleanup.
func URL(t TB) string {
	t.Helper()
	admin, err := AdminURL()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if admin == "" {
		t.Skipf("no PostgreSQL server (set %s, or run one on 127.0.0.1:5432)", EnvURL)
	}
	u, drop, err := CreateDB(admin, "clawkit_test")
	if err != nil {
		t.Fatalf("create a test database: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Fatalf("drop the test database: %v", err)
		}
	})
	return u
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
