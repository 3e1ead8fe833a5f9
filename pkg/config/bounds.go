package config

import (
	"encoding/json"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
)

// The bounds of config.json, one definition for the reader (LoadFile) and
// every writer (Set, Save): a value is refused when it is set if the file
// it would make could not be read back, so one accepted `config set` can
// never make every later command fail (docs/errors.md,
// invalid_config_value).
const (
	// MaxBytes bounds config.json as written (indented): it is read whole
	// on every stateful command.
	MaxBytes = 16 << 20
	// MaxDepth bounds how deeply config.json nests: the root object is
	// depth 1, and every object or array inside adds one. A value set at
	// a dotted path nests as deep as its path's segments plus its own
	// depth. OpenClaw's own configs stay below 12.
	MaxDepth = 64
	// RepairMaxBytes is how much `config unset` reads of a config.json
	// over the bounds (written by an older clawkit or by hand), so the
	// key that made it too large or too deep can be removed: the rewrite
	// must then be within the bounds again.
	RepairMaxBytes = 64 << 20
)

// depthOf is the nesting depth of a decoded JSON value (a scalar is 0).
func depthOf(v any) int {
	d := 0
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range t {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// CheckValue refuses a value whose path and nesting could not be read
// back, before anything is written: more than MaxDepth levels (a path of
// too many segments, a value nested too deep) or, alone, more than
// MaxBytes of JSON. The whole file's size is checked again when it is
// saved.
func CheckValue(path string, v any) error {
	parts, err := SplitPath(path)
	if err != nil {
		return err
	}
	if d := len(parts) + depthOf(v); d > MaxDepth {
		return errs.Usage(errs.CodeInvalidConfigValue, "%s would nest config.json %d levels deep (%d path segments, a value %d deep); the limit is %d",
			shortPath(path), d, len(parts), depthOf(v), MaxDepth).
			WithHint("config.json must stay readable: set a shallower value or a shorter path")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errs.Usage(errs.CodeInvalidConfigValue, "the value of %s cannot be encoded: %v", shortPath(path), err)
	}
	if len(b) > MaxBytes {
		return errs.Usage(errs.CodeInvalidConfigValue, "the value of %s is %d bytes of JSON; config.json may hold at most %d", shortPath(path), len(b), MaxBytes).
			WithHint("keep large data in a file of its own and set its path")
	}
	return nil
}

// Encode renders the config as Save writes it, refusing a document that
// LoadFile would refuse to read back (too deep, too large).
func (c *Config) Encode() ([]byte, error) {
	if d := depthOf(c.Root); d > MaxDepth {
		return nil, errs.Usage(errs.CodeInvalidConfigValue, "%s would nest %d levels deep; the limit is %d", c.Path, d, MaxDepth).
			WithHint("unset the deeply nested key")
	}
	b, err := json.MarshalIndent(c.Root, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if len(b) > MaxBytes {
		return nil, errs.Usage(errs.CodeInvalidConfigValue, "%s would be %d bytes; the limit is %d", c.Path, len(b), MaxBytes).
			WithHint("config.json must stay readable: set a smaller value, or unset a large key")
	}
	return b, nil
}

// shortPath is a dotted path for a message: a path of thousands of
// segments is named by its start and its length.
func shortPath(path string) string {
	if len(path) <= 120 {
		return path
	}
	return strings.ToValidUTF8(path[:100], "") + "… (" + itoa(len(path)) + " bytes)"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
