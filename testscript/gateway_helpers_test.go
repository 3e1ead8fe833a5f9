package testscript

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
)

// Helpers for the gateway-as-a-service scripts (gateway_*.txtar).
func gatewayKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"run-together": runTogether,
		},
	}
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
