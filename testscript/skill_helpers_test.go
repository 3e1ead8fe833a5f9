package testscript

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Helpers for the skill scripts (skill_*.txtar).
func init() {
	helperCommands["skill-bigfile"] = skillBigFile
	helperCommands["skill-many"] = skillMany
	helperCommands["skill-hook"] = skillHook
}

func skillDie(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "skill helper: "+format+"\n", args...)
	os.Exit(1)
}

// skill-bigfile PATH SIZE [PREFIX-FILE]: write a file of exactly SIZE bytes:
// the content of PREFIX-FILE (if given) padded with 'x' lines.
func skillBigFile() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		skillDie("usage: skill-bigfile PATH SIZE [PREFIX-FILE]")
	}
	size, err := strconv.Atoi(os.Args[2])
	if err != nil || size < 0 {
		skillDie("bad size %q", os.Args[2])
	}
	var prefix []byte
	if len(os.Args) == 4 {
		if prefix, err = os.ReadFile(os.Args[3]); err != nil {
			skillDie("%v", err)
		}
	}
	if len(prefix) > size {
		skillDie("prefix longer than size")
	}
	pad := bytes.Repeat([]byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"), size/64+1)
	data := append(prefix, pad[:size-len(prefix)]...)
	if err := os.MkdirAll(filepath.Dir(os.Args[1]), 0o755); err != nil {
		skillDie("%v", err)
	}
	if err := os.WriteFile(os.Args[1], data, 0o644); err != nil {
		skillDie("%v", err)
	}
}

// skill-many DIR N: create N one-line files DIR/f000.md … inside DIR.
func skillMany() {
	if len(os.Args) != 3 {
		skillDie("usage: skill-many DIR N")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		skillDie("bad count")
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		skillDie("%v", err)
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(os.Args[1], fmt.Sprintf("f%03d.md", i)), []byte("note\n"), 0o644); err != nil {
			skillDie("%v", err)
		}
	}
}

// skill-hook OUT [EXIT]: a skill_changed hook. It appends what it reads on
// stdin (one event, one line) to OUT and exits with EXIT (default 0),
// printing a line on stderr when failing so scripts can see it reported.
func skillHook() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		skillDie("usage: skill-hook OUT [EXIT]")
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		skillDie("%v", err)
	}
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		skillDie("%v", err)
	}
	if _, err := f.Write(in); err != nil {
		skillDie("%v", err)
	}
	if err := f.Close(); err != nil {
		skillDie("%v", err)
	}
	if len(os.Args) == 3 {
		code, _ := strconv.Atoi(os.Args[2])
		if code != 0 {
			fmt.Fprintln(os.Stderr, "hook refusing on purpose")
		}
		os.Exit(code)
	}
}
