// Command depsfloor is the start-up floor of clawkit's dependency set: a
// hello world that links, and so initialises, every package outside the
// standard library that clawkit's own packages import (plus net/http), and
// none of clawkit's code. scripts/bench-core.sh times it beside
// `clawkit version`, so the start-up figures can be read against what any
// binary with these dependencies pays before its main runs.
package main

import (
	"os"

	_ "github.com/alecthomas/kong"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/uuid"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/klauspost/compress/flate"
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/riverqueue/river"
	_ "github.com/riverqueue/river/riverdriver/riverdatabasesql"
	_ "github.com/riverqueue/river/riverdriver/riverpgxv5"
	_ "github.com/riverqueue/river/rivermigrate"
	_ "github.com/riverqueue/river/rivertype"
	_ "github.com/rogpeppe/go-internal/lockedfile"
	_ "github.com/willabides/kongplete"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/text/unicode/norm"
	_ "modernc.org/sqlite"
	_ "net/http"
)

func main() {
	if _, err := os.Stdout.WriteString("hello\n"); err != nil {
		os.Exit(1)
	}
}
