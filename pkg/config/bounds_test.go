package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func nested(n int) any {
	var v any = 1.0
	for range n {
		v = []any{v}
	}
	return v
}

// What Set accepts, Save writes and LoadFile reads back; one level more is
// refused by the writer (invalid_config_value) and by the reader.
func TestBoundsSharedByWriterAndReader(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	c := &Config{Path: p, Root: map[string]any{}}
	if err := c.Set("a.b", nested(MaxDepth-2)); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); err != nil {
		t.Fatalf("what was saved does not read back: %v", err)
	}
	for _, tc := range []struct {
		path string
		v    any
	}{
		{"a.c", nested(MaxDepth - 1)},
		{strings.Repeat("k.", MaxDepth) + "v", 1.0},
		{"big", strings.Repeat("x", MaxBytes)},
	} {
		err := c.Set(tc.path, tc.v)
		if e := errs.As(err); e == nil || e.Code != "invalid_config_value" || e.Kind != errs.KindUsage {
			t.Fatalf("Set(%.40q): %v, want invalid_config_value", tc.path, err)
		}
	}
	// A document the writer would make over MaxBytes is refused by Save,
	// the file unchanged.
	before, _ := os.ReadFile(p)
	c.Root["x"] = strings.Repeat("x", MaxBytes/2)
	c.Root["y"] = strings.Repeat("y", MaxBytes/2)
	if err := c.Save(); errs.CodeOf(err) != "invalid_config_value" {
		t.Fatalf("Save over the bound: %v", err)
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatal("a refused Save changed the file")
	}
	// The reader refuses a file nested deeper; repair reads it.
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	if err := os.WriteFile(p, []byte(deep), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); errs.CodeOf(err) != "invalid_config" {
		t.Fatalf("deep file: %v", err)
	}
	r, err := LoadForRepair(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if removed, _ := r.Unset("a"); !removed || r.Save() != nil {
		t.Fatal("repair failed")
	}
}

// FuzzEncodeReadsBack: whatever LoadFile accepts, Encode writes in a form
// LoadFile accepts again, with the same content.
func FuzzEncodeReadsBack(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"a":"\u202e"}`, strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)} {
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
			return
		}
		b, err := c.Encode()
		if err != nil {
			// Indentation may grow a file near MaxBytes over it: then
			// Save refuses, which is the bound doing its work.
			if len(data) > MaxBytes/4 && errs.CodeOf(err) == "invalid_config_value" {
				return
			}
			t.Fatalf("a readable config does not encode: %v", err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c2, err := LoadFile(p)
		if err != nil {
			t.Fatalf("encoded config does not read back: %v", err)
		}
		b2, _ := c2.Encode()
		if string(b) != string(b2) {
			t.Fatal("round trip changed the config")
		}
	})
}
