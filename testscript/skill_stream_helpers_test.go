package testscript

import (
	"archive/tar"
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Helpers for the skill bundle and watch scripts (skill_bundle*.txtar,
// skill_watch*.txtar).
func init() {
	helperCommands["skill-tar"] = skillTar
	helperCommands["skill-watch-run"] = skillWatchRun
	helperCommands["skill-await"] = skillAwait
	helperCommands["skill-watch-epipe"] = skillWatchEPIPE
}

// skill-tar OUT ENTRY…: write a tar with the given entries, for bundles no
// honest tool makes. ENTRY is TYPE:NAME[=DATA] with TYPE f (regular file,
// DATA the content, or @FILE for a file's), x (executable file), d (folder), l (symbolic link,
// DATA the target), h (hard link, DATA the target), c (character device),
// p (FIFO) or g (PAX global header).
func skillTar() {
	if len(os.Args) < 2 {
		skillDie("usage: skill-tar OUT ENTRY…")
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		skillDie("%v", err)
	}
	tw := tar.NewWriter(f)
	for _, e := range os.Args[2:] {
		kind, rest, ok := strings.Cut(e, ":")
		if !ok {
			skillDie("bad entry %q", e)
		}
		name, data, _ := strings.Cut(rest, "=")
		if strings.HasPrefix(data, "@") {
			b, err := os.ReadFile(data[1:])
			if err != nil {
				skillDie("%v", err)
			}
			data = string(b)
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch kind {
		case "f", "x":
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
			if kind == "x" {
				h.Mode = 0o755
			}
		case "d":
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case "l":
			h.Typeflag, h.Linkname = tar.TypeSymlink, data
		case "h":
			h.Typeflag, h.Linkname = tar.TypeLink, data
		case "c":
			h.Typeflag = tar.TypeChar
		case "p":
			h.Typeflag = tar.TypeFifo
		case "g":
			h = &tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": data}}
		default:
			skillDie("bad entry type %q", kind)
		}
		if err := tw.WriteHeader(h); err != nil {
			skillDie("%v", err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(data)); err != nil {
				skillDie("%v", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		skillDie("%v", err)
	}
	if err := f.Close(); err != nil {
		skillDie("%v", err)
	}
}

// skill-watch-run OUT ARGS…: run `clawkit ARGS…` with its stdout going
// straight to the file OUT (unbuffered, so skill-await sees each line as
// it is printed) and its stderr to OUT.stderr. SIGINT and SIGTERM are
// passed on; the helper exits with clawkit's exit code and prints it.
func skillWatchRun() {
	if len(os.Args) < 3 {
		skillDie("usage: skill-watch-run OUT ARGS…")
	}
	out, err := os.Create(os.Args[1])
	if err != nil {
		skillDie("%v", err)
	}
	errf, err := os.Create(os.Args[1] + ".stderr")
	if err != nil {
		skillDie("%v", err)
	}
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		skillDie("%v", err)
	}
	cmd := exec.Command(bin, os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = out, errf
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		skillDie("%v", err)
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	fmt.Printf("clawkit exit %d\n", code)
	os.Exit(code)
}

// skill-await FILE N REGEXP: wait (up to 2 minutes, a hang guard) until
// at least N lines of FILE match REGEXP, then print the matching lines.
func skillAwait() {
	if len(os.Args) != 4 {
		skillDie("usage: skill-await FILE N REGEXP")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		skillDie("bad count %q", os.Args[2])
	}
	re := regexp.MustCompile(os.Args[3])
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(os.Args[1])
		var got []string
		for _, l := range strings.Split(string(b), "\n") {
			if re.MatchString(l) {
				got = append(got, l)
			}
		}
		if len(got) >= n {
			fmt.Println(strings.Join(got, "\n"))
			return
		}
		if time.Now().After(deadline) {
			skillDie("%d of %d lines of %s match %s after 2 minutes:\n%s", len(got), n, os.Args[1], os.Args[3], b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// skill-watch-epipe ARGS…: run `clawkit ARGS…` with stdout a pipe, read
// the first line, close the pipe, then wait (up to 2 minutes) for clawkit
// to end by itself, without any further edit: it must notice that its
// reader is gone. Prints the first line and clawkit's exit code.
func skillWatchEPIPE() {
	bin, err := exec.LookPath("clawkit")
	if err != nil {
		skillDie("%v", err)
	}
	cmd := exec.Command(bin, os.Args[1:]...)
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		skillDie("%v", err)
	}
	if err := cmd.Start(); err != nil {
		skillDie("%v", err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		skillDie("first line: %v", err)
	}
	fmt.Print("first: " + line)
	pipe.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		skillDie("clawkit kept running for 2 minutes after its stdout closed")
	}
	fmt.Printf("clawkit exit %d\n", cmd.ProcessState.ExitCode())
}
