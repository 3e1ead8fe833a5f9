// Package strictjson refuses what encoding/json accepts silently in a
// contract document (a research RPC envelope, an export manifest, a
// receipt, an install record): invalid UTF-8 (decoded as U+FFFD), duplicate
// object keys at any depth (the last one wins), nesting beyond a bound, and
// data after the document. It checks well-formedness only, not shape; the
// caller decodes into its own types afterwards.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// Kind classifies a refusal, so callers can map it to their stable codes.
type Kind int

// The kinds of refusal.
const (
	InvalidUTF8 Kind = iota + 1
	Syntax
	DuplicateKey
	TooDeep
	Trailing
)

// Error is a refusal; Key is set for DuplicateKey, Depth for TooDeep.
type Error struct {
	Kind  Kind
	Key   string
	Depth int
	Err   error // the decoder's error, for Syntax
}

func (e *Error) Error() string {
	switch e.Kind {
	case InvalidUTF8:
		return "not valid UTF-8"
	case DuplicateKey:
		return fmt.Sprintf("duplicate key %q", e.Key)
	case TooDeep:
		return fmt.Sprintf("nested deeper than %d levels", e.Depth)
	case Trailing:
		return "unexpected data after the JSON value"
	}
	return fmt.Sprintf("invalid JSON: %v", e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Check validates raw as exactly one JSON value nested at most maxDepth
// levels, with unique keys in every object and valid UTF-8 throughout.
func Check(raw []byte, maxDepth int) error {
	if !utf8.Valid(raw) {
		return &Error{Kind: InvalidUTF8}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walk(dec, 0, maxDepth); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Kind: Trailing}
	}
	return nil
}

func walk(dec *json.Decoder, depth, maxDepth int) error {
	if depth > maxDepth {
		return &Error{Kind: TooDeep, Depth: maxDepth}
	}
	tok, err := dec.Token()
	if err != nil {
		return &Error{Kind: Syntax, Err: err}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return &Error{Kind: Syntax, Err: err}
			}
			k, _ := kt.(string)
			if seen[k] {
				return &Error{Kind: DuplicateKey, Key: k}
			}
			seen[k] = true
			if err := walk(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walk(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return &Error{Kind: Syntax, Err: err}
	}
	return nil
}
