package fakeapi

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// Serve runs a standalone fake on 127.0.0.1:0 until SIGINT or SIGTERM: it
// logs every request to logPath and, once it listens, writes its base URL
// to urlPath (atomically, so a reader that sees the file sees the whole
// URL: the file is the readiness signal). Used by cmd/fakegoogle (demos,
// the README's first session, benchmarks) and by the test harness.
func Serve(urlPath, logPath string) error { return ServeOn("127.0.0.1:0", urlPath, logPath) }

// ServeOn is Serve on a given address.
func ServeOn(addr, urlPath, logPath string) error {
	l, err := StartOn(addr, logPath)
	if err != nil {
		return err
	}
	defer l.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if err := fsx.WriteFile(urlPath, []byte(l.URL+"\n"), 0o644); err != nil {
		return err
	}
	<-sig
	return nil
}
