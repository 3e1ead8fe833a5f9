package testscript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Helpers for the lost-write scripts.
func raceKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			"concurrent-writers": concurrentWriters,
		},
	}
}

// concurrent-writers KIND N [STOP_AFTER]: run N clawkit processes at once,
// each making one distinct write of KIND (config, auth, session), then read
// the state back and check the contract of every exit code:
//
//	0     the write is present (a lost exit-0 write is the worst outcome)
//	3, 5  refused before any effect: the write is absent
//	4     outcome unknown: either is allowed
//
// With STOP_AFTER=K, `clawkit gateway stop` runs as soon as K writers have
// finished, so the rest race the gateway's shutdown. Prints one summary
// line; exits 1 on any violation.
func concurrentWriters() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		die("usage: concurrent-writers config|auth|session N [STOP_AFTER]")
	}
	kind := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		die("bad N %q", os.Args[2])
	}
	stopAfter := -1
	if len(os.Args) == 4 {
		if stopAfter, err = strconv.Atoi(os.Args[3]); err != nil {
			die("bad STOP_AFTER %q", os.Args[3])
		}
	}
	argv := func(i int) ([]string, []string) {
		switch kind {
		case "config":
			return []string{"config", "set", fmt.Sprintf("race.k%d", i), strconv.Itoa(i)}, nil
		case "auth":
			return []string{"auth", "add", fmt.Sprintf("p%d", i), "--provider", "google", "--api-key-env", "RACE_KEY"}, []string{"RACE_KEY=secret-" + strconv.Itoa(i)}
		case "session":
			return []string{"session", "create", fmt.Sprintf("s%d", i)}, nil
		}
		die("unknown kind %q", kind)
		return nil, nil
	}
	codes := make([]int, n)
	stderrs := make([]string, n)
	var mu sync.Mutex
	finished := 0
	stopped := make(chan string, 1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, extra := argv(i)
			cmd := exec.Command("clawkit", append([]string{"--lock-timeout", "60s"}, args...)...)
			cmd.Env = append(os.Environ(), extra...)
			var se bytes.Buffer
			cmd.Stderr = &se
			<-start
			err := cmd.Run()
			codes[i] = exitCode(err)
			stderrs[i] = se.String()
			mu.Lock()
			finished++
			if finished == stopAfter {
				go func() {
					out, err := exec.Command("clawkit", "gateway", "stop").CombinedOutput()
					stopped <- fmt.Sprintf("gateway stop: %v %s", err, bytes.TrimSpace(out))
				}()
			}
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if stopAfter >= 0 {
		fmt.Fprintln(os.Stderr, <-stopped)
	}
	present := readBack(kind)
	byCode := map[int]int{}
	bad := 0
	for i := range n {
		byCode[codes[i]]++
		var key string
		switch kind {
		case "config":
			key = fmt.Sprintf("k%d", i)
		case "auth":
			key = fmt.Sprintf("p%d", i)
		case "session":
			key = fmt.Sprintf("s%d", i)
		}
		switch c := codes[i]; {
		case c == 0 && !present[key]:
			bad++
			fmt.Fprintf(os.Stderr, "LOST: writer %d exited 0 but %s is missing\n", i, key)
		case (c == 3 || c == 5) && present[key]:
			bad++
			fmt.Fprintf(os.Stderr, "LIE: writer %d exited %d (no effect) but %s is present: %s\n", i, c, key, stderrs[i])
		case c != 0 && c != 3 && c != 4 && c != 5:
			bad++
			fmt.Fprintf(os.Stderr, "writer %d exited %d: %s\n", i, c, stderrs[i])
		}
	}
	var parts []string
	for _, c := range []int{0, 3, 4, 5} {
		parts = append(parts, fmt.Sprintf("exit%d=%d", c, byCode[c]))
	}
	fmt.Printf("%s writers=%d %s present=%d violations=%d\n", kind, n, strings.Join(parts, " "), len(present), bad)
	if bad > 0 {
		os.Exit(1)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// readBack lists what the state holds for kind, through clawkit itself
// (offline or routed, whichever is current).
func readBack(kind string) map[string]bool {
	got := map[string]bool{}
	var args []string
	switch kind {
	case "config":
		args = []string{"config", "get", "--json"}
	case "auth":
		args = []string{"auth", "list", "--json"}
	case "session":
		args = []string{"session", "list", "--json"}
	}
	out, err := exec.Command("clawkit", args...).Output()
	if err != nil {
		die("read back %s: %v", kind, err)
	}
	switch kind {
	case "config":
		var doc map[string]any
		if err := json.Unmarshal(out, &doc); err != nil {
			die("config: %v", err)
		}
		race, _ := doc["race"].(map[string]any)
		for k := range race {
			got[k] = true
		}
	default:
		var list []map[string]any
		if err := json.Unmarshal(out, &list); err != nil {
			die("%s list: %v: %s", kind, err, out)
		}
		for _, e := range list {
			for _, f := range []string{"id", "sessionKey"} {
				if s, ok := e[f].(string); ok {
					got[s] = true
				}
			}
		}
	}
	return got
}
