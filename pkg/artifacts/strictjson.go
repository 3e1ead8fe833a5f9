package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// CheckStrictJSON refuses what encoding/json would accept silently in a
// contract document (manifest, receipt, install record): invalid UTF-8
// (which it replaces with U+FFFD) and duplicate object keys (where the last
// one wins), at any depth. It does not check the document's shape.
func CheckStrictJSON(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// One frame per open container: the keys seen so far for an object,
	// nil for an array.
	var stack []map[string]bool
	expectKey := func() bool {
		return len(stack) > 0 && stack[len(stack)-1] != nil
	}
	afterValue := true // whether the next string in an object is a key
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, map[string]bool{})
				afterValue = true
			case '[':
				stack = append(stack, nil)
			case '}', ']':
				stack = stack[:len(stack)-1]
				afterValue = true
			}
			continue
		case string:
			if expectKey() && afterValue {
				// In an object, tokens alternate key, value (the decoder
				// checks the syntax), so a string right after a value or
				// the opening brace is a key.
				keys := stack[len(stack)-1]
				if keys[t] {
					return fmt.Errorf("duplicate key %q", t)
				}
				keys[t] = true
				afterValue = false
				continue
			}
		}
		afterValue = true
	}
}
