package testscript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// Helpers for the gateway-as-a-service scripts (gateway_*.txtar).
func gatewayKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"run-together": runTogether,
		},
		cmds: map[string]scriptCmd{
			"http-get":   cmdHTTPGet,
			"await-http": cmdAwaitHTTP,
		},
	}
}

// http-get URL: GET URL (a gateway's metrics listener); the body goes to
// stdout and "HTTP <status>" to stderr, for the next checks. A request that
// gets no answer fails the script.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: http-get URL")
	}
	code, body, err := httpGet(args[0])
	if err != nil {
		ts.Fatalf("http-get: %v", err)
	}
	_, _ = fmt.Fprintf(ts.Stderr(), "HTTP %d\n", code) // the script's stderr buffer: cannot fail
	_, _ = fmt.Fprint(ts.Stdout(), body)               // the script's stdout buffer: cannot fail
}

// await-http URL STATUS WITHIN: wait until GET URL answers STATUS, at most
// WITHIN (a duration: the bound a script asserts, such as a lease's
// renewal interval); the body goes to stdout and "HTTP <status> after
// <seconds>s" to stderr.
func cmdAwaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: await-http URL STATUS WITHIN")
	}
	want := intArg(ts, "await-http", "status", args[1], 100)
	within, err := time.ParseDuration(args[2])
	if err != nil || within <= 0 {
		ts.Fatalf("await-http: bad WITHIN %q", args[2])
	}
	t0 := time.Now()
	var code int
	var body string
	awaitWithin(ts, within, 50*time.Millisecond, func() (bool, string) {
		var err error
		code, body, err = httpGet(args[0])
		if err != nil {
			return false, fmt.Sprintf("GET %s: %v", args[0], err)
		}
		return code == want, fmt.Sprintf("GET %s answered %d (%q), not %d", args[0], code, body, want)
	})
	_, _ = fmt.Fprintf(ts.Stderr(), "HTTP %d after %.1fs\n", code, time.Since(t0).Seconds()) // the script's stderr buffer: cannot fail
	_, _ = fmt.Fprint(ts.Stdout(), body)                                                     // the script's stdout buffer: cannot fail
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer fsx.CloseRead(resp.Body)
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(b), err
}

// run-together N PROGRAM [ARGS...]: start N copies of one command at the
// same moment, wait for all, and print each one's exit status with its
// output, ordered by exit status (so a script can match "one won, one was
// refused" whichever copy won):
//
//	[exit 0]
//	…its stdout and stderr…
//
// Exits 0 whatever the copies did: the script checks what they printed.
func runTogether() {
	if len(os.Args) < 3 {
		die("usage: run-together N PROGRAM [ARGS...]")
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 1 || n > 16 {
		die("run-together: N must be 1..16, not %q", os.Args[1])
	}
	type result struct {
		code int
		out  []byte
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		cmd := exec.Command(os.Args[2], os.Args[3:]...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
				fmt.Fprintf(&out, "run-together: %v\n", err)
			}
			results[i] = result{code, out.Bytes()}
		}()
	}
	close(start)
	wg.Wait()
	sort.SliceStable(results, func(a, b int) bool { return results[a].code < results[b].code })
	for _, r := range results {
		fmt.Printf("[exit %d]\n%s", r.code, r.out)
	}
}
