package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func TestSetGetUnset(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("a.b.c", ParseValue("true")); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("a.s", ParseValue("hello world")); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := c2.Bool("a.b.c"); !ok || !b {
		t.Fatalf("a.b.c = %v %v", b, ok)
	}
	if s := c2.String("a.s"); s != "hello world" {
		t.Fatalf("a.s = %q", s)
	}
	if err := c2.Set("a.s.x", 1); errs.CodeOf(err) != "config_not_object" {
		t.Fatalf("set through a string: %v", err)
	}
	if ok, _ := c2.Unset("a.b.c"); !ok {
		t.Fatal("unset reported nothing removed")
	}
	if _, ok := c2.Get("a.b.c"); ok {
		t.Fatal("still set")
	}
}

func TestInvalidNamesOffset(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte("{\n  \"a\": tru\n}"), 0o600)
	_, err := Load(dir)
	e := errs.As(err)
	if e == nil || e.Code != "invalid_config" {
		t.Fatalf("err = %v", err)
	}
	if want := "line 2"; !strings.Contains(e.Message, want) || !strings.Contains(e.Message, FileName) {
		t.Fatalf("message %q lacks position or file", e.Message)
	}
}

// FuzzLoad: any bytes either load as an object or fail with invalid_config;
// never a panic, never another error class.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":{"b":1}}`, `[1]`, `{"a":`, "", "{} {}", `{"a":1e999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, FileName)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadFile(p)
		if err != nil {
			if errs.CodeOf(err) != "invalid_config" {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if c.Root == nil {
			t.Fatal("nil root")
		}
	})
}
