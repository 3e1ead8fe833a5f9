// Package config reads and edits <home>/config.json: OpenClaw-shaped JSON
// addressed by dotted paths (plugins.entries.google.config.research.enabled).
//
// A file that fails to parse is reported with its path and byte offset and
// is never rewritten: Set/Unset refuse to save over it.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// FileName is the config file's name inside the home.
const FileName = "config.json"

// Config is the decoded document. The root is always a JSON object.
type Config struct {
	Path string
	Root map[string]any
}

// Load reads the config of home. A missing file is an empty config.
func Load(home string) (*Config, error) {
	return LoadFile(filepath.Join(home, FileName))
}

// LoadFile reads a config file at path. A missing file is an empty config.
func LoadFile(path string) (*Config, error) { return loadFile(path, false) }

// LoadForRepair reads home's config as `config unset` does: up to
// RepairMaxBytes and at any depth encoding/json reads, so a file over the
// bounds can have its offending key removed (Save then checks the bounds).
func LoadForRepair(home string) (*Config, error) {
	return loadFile(filepath.Join(home, FileName), true)
}

func loadFile(path string, repair bool) (*Config, error) {
	c := &Config{Path: path, Root: map[string]any{}}
	limit := int64(MaxBytes)
	if repair {
		limit = RepairMaxBytes
	}
	data, err := fsx.ReadRegular(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		e := errs.Failed(errs.CodeConfigUnreadable, "cannot read %s: %v", path, err).
			WithHint("config.json must be a regular file of at most %d bytes", MaxBytes)
		if errors.Is(err, fsx.ErrTooLarge) && !repair {
			e = e.WithHint("remove the key that made it so large with 'clawkit config unset PATH' (it reads up to %d bytes to repair the file)", RepairMaxBytes)
		}
		return nil, e
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	// encoding/json would silently turn invalid UTF-8 into U+FFFD, and the
	// next save would then rewrite the user's bytes: refuse instead.
	if !utf8.Valid(data) {
		off := int64(len(data))
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				off = int64(i)
				break
			}
			i += n
		}
		line, col := lineCol(data, off)
		return nil, errs.Failed(errs.CodeInvalidConfig, "%s: invalid UTF-8 at offset %d (line %d, column %d)", path, off, line, col).
			WithHint("fix the file by hand; clawkit never rewrites a config it cannot parse")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, invalid(path, data, err)
	}
	if dec.More() {
		return nil, errs.Failed(errs.CodeInvalidConfig, "%s: invalid JSON at offset %d: trailing data after the document", path, dec.InputOffset()).
			WithHint("fix the file by hand; clawkit never rewrites a config it cannot parse")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errs.Failed(errs.CodeInvalidConfig, "%s: the top level must be a JSON object", path).
			WithHint("fix the file by hand; clawkit never rewrites a config it cannot parse")
	}
	if d := depthOf(m); d > MaxDepth && !repair {
		return nil, errs.Failed(errs.CodeInvalidConfig, "%s nests %d levels deep; the limit is %d", path, d, MaxDepth).
			WithHint("remove the deeply nested key with 'clawkit config unset PATH'")
	}
	c.Root = m
	return c, nil
}

func invalid(path string, data []byte, err error) error {
	off := int64(len(data))
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, including the offending one; report
		// the offending byte itself (0-based).
		off = max(se.Offset-1, 0)
	case errors.As(err, &te):
		off = te.Offset
	}
	line, col := lineCol(data, off)
	return errs.Failed(errs.CodeInvalidConfig, "%s: invalid JSON at offset %d (line %d, column %d): %v", path, off, line, col, err).
		WithHint("fix the file by hand; clawkit never rewrites a config it cannot parse")
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// SplitPath splits a dotted path, refusing empty segments.
func SplitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errs.Usage(CodeInvalidConfigPath, "empty config path").WithHint("name a key, e.g. plugins.entries.google.enabled")
	}
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return nil, errs.Usage(CodeInvalidConfigPath, "config path %q has an empty segment", path).
				WithHint("separate keys with single dots, e.g. plugins.entries.google.enabled")
		}
	}
	return parts, nil
}

// Get returns the value at a dotted path.
func (c *Config) Get(path string) (any, bool) {
	parts, err := SplitPath(path)
	if err != nil {
		return nil, false
	}
	var cur any = c.Root
	for _, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// String returns the string at path, or "" when absent or not a string.
func (c *Config) String(path string) string {
	v, _ := c.Get(path)
	s, _ := v.(string)
	return s
}

// Bool returns the boolean at path and whether it was a boolean.
func (c *Config) Bool(path string) (val, ok bool) {
	v, _ := c.Get(path)
	b, ok := v.(bool)
	return b, ok
}

// Decode decodes the value at path into dst (via JSON); absent → false.
func (c *Config) Decode(path string, dst any) (bool, error) {
	v, ok := c.Get(path)
	if !ok {
		return false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return true, err
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return true, errs.Failed(errs.CodeInvalidConfig, "%s: %s holds %s where %s was expected", c.Path, path, shapeOf(v), shapeOfType(dst)).
			WithHint("fix it with 'clawkit config set %s VALUE'", path)
	}
	return true, nil
}

// ParseValue parses a command-line value: JSON when it parses, else the
// literal string. A value that starts like a JSON object, array or string
// ({, [ or ") but does not parse is refused rather than stored as a string:
// a missing brace is a typo, and storing it would only move the error to
// the next reader.
func ParseValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	trailing := err == nil && strings.TrimSpace(s[dec.InputOffset():]) != ""
	if err == nil && !trailing {
		return v, nil
	}
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" || !strings.ContainsRune(`{["`, rune(t[0])) {
		return s, nil
	}
	off := int64(len(s))
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = max(se.Offset-1, 0)
	case err == nil:
		off = dec.InputOffset() + int64(len(s[dec.InputOffset():])-len(strings.TrimLeft(s[dec.InputOffset():], " \t\r\n")))
		err = errors.New("trailing data after the value")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		err = errors.New("unexpected end of the value")
	}
	_, col := lineCol([]byte(s), off)
	return nil, errs.Usage(errs.CodeInvalidConfigValue, "the value looks like JSON but does not parse at column %d: %v", col, err).
		WithHint("fix the JSON, or quote it as a JSON string (e.g. '\"{x\"') to store the text itself")
}

// Set stores v at path, creating intermediate objects. A value that would
// put a password into database.url is refused (CheckSet).
func (c *Config) Set(path string, v any) error {
	if err := CheckSet(path, v); err != nil {
		return err
	}
	if err := CheckValue(path, v); err != nil {
		return err
	}
	return c.set(path, v)
}

func (c *Config) set(path string, v any) error {
	parts, err := SplitPath(path)
	if err != nil {
		return err
	}
	cur := c.Root
	for i, p := range parts[:len(parts)-1] {
		next, ok := cur[p]
		if !ok {
			m := map[string]any{}
			cur[p] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return errs.Failed(CodeConfigNotObject, "cannot set %s: %s is not an object", path, strings.Join(parts[:i+1], ".")).
				WithHint("unset %s first if you mean to replace it", strings.Join(parts[:i+1], "."))
		}
		cur = m
	}
	cur[parts[len(parts)-1]] = v
	return nil
}

// Unset removes the value at path; it reports whether something was removed.
func (c *Config) Unset(path string) (bool, error) {
	parts, err := SplitPath(path)
	if err != nil {
		return false, err
	}
	cur := c.Root
	for _, p := range parts[:len(parts)-1] {
		m, ok := cur[p].(map[string]any)
		if !ok {
			return false, nil
		}
		cur = m
	}
	last := parts[len(parts)-1]
	if _, ok := cur[last]; !ok {
		return false, nil
	}
	delete(cur, last)
	return true, nil
}

// Save writes the config atomically (0600: it may name credentials' ids and
// hook commands).
func (c *Config) Save() error {
	b, err := c.Encode()
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(c.Path, b, 0o600); err != nil {
		return errs.Failed(CodeConfigWriteFailed, "cannot write %s: %v", c.Path, err)
	}
	return nil
}

// Format renders a value for `config get`: strings bare, everything else as
// JSON.
func Format(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// shapeOf names the JSON shape of a decoded value for error messages.
func shapeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// shapeOfType names the JSON shape a Go destination expects.
func shapeOfType(dst any) string {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of another shape"
}

// WriteFailed is config_write_failed for path: an edit that could not be
// made (its edit lock cannot be taken, the file cannot be replaced).
func WriteFailed(path string, err error) error {
	return errs.Failed(CodeConfigWriteFailed, "cannot write %s: %v", path, err).
		WithHint("config.json and its edit lock %s must be regular files in a writable home", filepath.Base(path)+fsx.LockSuffix)
}
