package testscript

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
)

// Helpers for the foundation scripts (owner lock, gateway, store).
func coreKit() scriptKit {
	return scriptKit{
		// hold-owner-lock and fake-gateway hold the lock or serve the
		// socket under a pid of their own, which is what clawkit checks.
		programs: map[string]func(){
			"hold-owner-lock": holdOwnerLock,
			"fake-gateway":    fakeGateway,
			"gateway-call":    gatewayCall,
			"kill9-gateway":   kill9Gateway,
			"exit-status":     exitStatus,
		},
		cmds: map[string]scriptCmd{
			"set-schema-version": cmdSetSchemaVersion,
		},
	}
}

// exit-status N PROGRAM [ARGS...]: runs PROGRAM with this process's
// stdio and exits 0 when it exits with status N, 1 (naming the status)
// otherwise. It is the exits command for a background run
// (exec exit-status 4 clawkit ... & … wait), which testscript's own
// commands cannot be: the script's wait then fails unless the status was N.
func exitStatus() {
	if len(os.Args) < 3 {
		die("usage: exit-status N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(os.Args[1])
	if err != nil || want < 0 {
		die("exit-status: %q is not an exit status", os.Args[1])
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	got := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			die("exit-status: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		die("%s exited with status %d, want %d", os.Args[2], got, want)
	}
}

// hold-owner-lock HOME DURATION: take the owner lock like a wedged clawkit
// would, write our pid into it, say "locked" and hold it.
func holdOwnerLock() {
	if len(os.Args) != 3 {
		die("usage: hold-owner-lock HOME DURATION")
	}
	d, err := time.ParseDuration(os.Args[2])
	if err != nil {
		die("%v", err)
	}
	if err := os.MkdirAll(os.Args[1], 0o700); err != nil {
		die("%v", err)
	}
	f, err := lockedfile.OpenFile(filepath.Join(os.Args[1], "owner.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		die("%v", err)
	}
	if err := f.Truncate(0); err != nil {
		die("%v", err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		die("%v", err)
	}
	if err := os.WriteFile(filepath.Join(os.Args[1], "holder.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		die("%v", err)
	}
	fmt.Println("locked")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-time.After(d):
	case <-sig:
	}
	if err := f.Close(); err != nil {
		die("%v", err)
	}
}

// fake-gateway HOME MODE: a process that advertises itself as the gateway of
// HOME but misbehaves. MODE:
//
//	call-garbage   status answers correctly, /v1/call answers garbage
//	call-hangup    status answers correctly, /v1/call closes the connection
//	status-garbage status answers garbage (and the fake holds the lock)
func fakeGateway() {
	if len(os.Args) != 3 {
		die("usage: fake-gateway HOME MODE")
	}
	h := owner.Home{Dir: os.Args[1]}
	mode := os.Args[2]
	if err := os.MkdirAll(h.Dir, 0o700); err != nil {
		die("%v", err)
	}
	if mode == "status-garbage" {
		f, err := lockedfile.OpenFile(h.Lock(), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			die("%v", err)
		}
		defer fsx.CloseRead(f) // the lock: held until exit, its pid written below
		if err := f.Truncate(0); err != nil {
			die("%v", err)
		}
		if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
			die("%v", err)
		}
	}
	// Where a real gateway would listen (a long TMPDIR moves it out of
	// the home: README "Long socket paths").
	sock, err := h.SocketPath()
	if err != nil {
		die("%v", err)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		die("%v", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		die("%v", err)
	}
	const id = "00000000-fake-gateway"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		if mode == "status-garbage" {
			// A fake: a write error means the client went away.
			_, _ = w.Write([]byte("\x00\x01 not json"))
			return
		}
		_ = json.NewEncoder(w).Encode(owner.Status{OwnerID: id, PID: os.Getpid(), Socket: sock})
	})
	mux.HandleFunc("POST /v1/call", func(w http.ResponseWriter, r *http.Request) {
		if mode == "call-hangup" {
			hj := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			_ = c.Close() // the hang-up is the point
			return
		}
		_, _ = w.Write([]byte("<html>garbage")) // as above
	})
	st, _ := owner.ProcessStartTime(os.Getpid())
	if err := owner.WriteRecord(h, owner.Record{OwnerID: id, PID: os.Getpid(), StartTime: st, Socket: sock, StartedAt: time.Now()}); err != nil {
		die("%v", err)
	}
	fmt.Println("serving")
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }() // serves until the process exits
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-time.After(60 * time.Second):
	}
	if err := os.Remove(h.Record()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		die("%v", err)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		die("%v", err)
	}
}

// gateway-call HOME OWNER_ID METHOD PARAMS: post one raw call to HOME's
// gateway with the given expected owner and print the raw reply.
func gatewayCall() {
	if len(os.Args) != 5 {
		die("usage: gateway-call HOME OWNER_ID METHOD PARAMS")
	}
	h := owner.Home{Dir: os.Args[1]}
	rec, err := owner.ReadRecord(h)
	if err != nil || rec == nil {
		die("no gateway record")
	}
	body, _ := json.Marshal(owner.CallRequest{Method: os.Args[3], Params: json.RawMessage(os.Args[4]), ExpectedOwnerID: os.Args[2], Scopes: []string{"operator.admin"}})
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", rec.Socket)
	}}
	resp, err := (&http.Client{Transport: tr}).Post("http://gateway/v1/call", "application/json", bytes.NewReader(body))
	if err != nil {
		die("%v", err)
	}
	defer fsx.CloseRead(resp.Body)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		die("%v", err)
	}
	fmt.Printf("HTTP %d %s", resp.StatusCode, buf.String())
}

// set-schema-version DB N: pretend a newer (or older) clawkit wrote DB.
func cmdSetSchemaVersion(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: set-schema-version DB N")
	}
	if err := setSchemaVersion(ts.MkAbs(args[0]), args[1]); err != nil {
		ts.Fatalf("set-schema-version: %v", err)
	}
}

// setSchemaVersion is set-schema-version's work.
func setSchemaVersion(path, version string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	_, err = db.Exec(`UPDATE meta SET schema_version = ? WHERE id = 1`, version)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// kill9-gateway HOME: SIGKILL the gateway named by HOME's owner record and
// wait until it is gone.
func kill9Gateway() {
	h := owner.Home{Dir: os.Args[1]}
	rec, err := owner.ReadRecord(h)
	if err != nil || rec == nil {
		die("no gateway record")
	}
	if err := syscall.Kill(rec.PID, syscall.SIGKILL); err != nil {
		die("%v", err)
	}
	for i := 0; i < 500; i++ {
		if !rec.Alive() {
			fmt.Println("killed", rec.PID)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	die("pid %d survived SIGKILL", rec.PID)
}
