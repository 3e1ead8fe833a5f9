package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
	if err := c.Set("a.b.c", mustParse(t, "true")); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("a.s", mustParse(t, "hello world")); err != nil {
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
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{\n  \"a\": tru\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
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

func mustParse(t *testing.T, s string) any {
	t.Helper()
	v, err := ParseValue(s)
	if err != nil {
		t.Fatalf("ParseValue(%q): %v", s, err)
	}
	return v
}

func TestParseValueRefusesBrokenJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		col  string
		want any
	}{
		{`{"x":1`, "column 7", nil},
		{`[1,2`, "column 5", nil},
		{`"abc`, "column 5", nil},
		{`{"x":1}}`, "column 8", nil},
		{` {bad}`, "column 3", nil},
		{`hello`, "", "hello"},
		{`12abc`, "", "12abc"},
		{`"quoted"`, "", "quoted"},
		{`{"x":1}`, "", map[string]any{"x": json.Number("1")}},
	} {
		v, err := ParseValue(tc.in)
		if tc.col != "" {
			if errs.CodeOf(err) != "invalid_config_value" || errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), tc.col) {
				t.Errorf("ParseValue(%q) = %v, %v; want invalid_config_value at %s", tc.in, v, err, tc.col)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(v, tc.want) {
			t.Errorf("ParseValue(%q) = %#v, %v; want %#v", tc.in, v, err, tc.want)
		}
	}
}

func TestLoadRefusesInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	orig := []byte("{\"a\": \"x\xffy\"}\n")
	if err := os.WriteFile(p, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if errs.CodeOf(err) != "invalid_config" || !strings.Contains(err.Error(), "invalid UTF-8 at offset 8") {
		t.Fatalf("Load = %v; want invalid_config at offset 8", err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(orig) {
		t.Fatalf("file changed: %q", b)
	}
}

func TestDecodeNamesKeyAndShape(t *testing.T) {
	c := &Config{Path: "config.json", Root: map[string]any{"a": map[string]any{"b": "{\"x\":1"}}}
	var dst map[string]any
	_, err := c.Decode("a.b", &dst)
	if err == nil || !strings.Contains(err.Error(), "a.b holds a string where an object was expected") {
		t.Fatalf("Decode = %v", err)
	}
}

// FuzzParseValue: a command-line value either parses to something that
// marshals back to JSON, or is refused as invalid_config_value (usage) —
// and only a value that starts like JSON can be refused.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{`{"x":1`, `[1,2]`, `"a`, `word`, ` {`, `12abc`, `{"a":{"b":[1,{"c":null}]}}`, "\xff", `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseValue(s)
		if err != nil {
			if errs.CodeOf(err) != "invalid_config_value" || errs.KindOf(err) != errs.KindUsage {
				t.Fatalf("ParseValue(%q): unexpected error %v", s, err)
			}
			if tt := strings.TrimLeft(s, " \t\r\n"); tt == "" || !strings.ContainsRune(`{["`, rune(tt[0])) {
				t.Fatalf("ParseValue(%q) refused a value that does not start like JSON", s)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("ParseValue(%q) = %#v does not marshal: %v", s, v, err)
		}
	})
}
