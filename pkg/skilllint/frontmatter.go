package skilllint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Split is the result of SplitFrontmatter. It never represents a failure:
// a document without frontmatter has Present=false and Body = everything.
type Split struct {
	// Present: the first line (after an optional BOM) is "---".
	Present bool
	// Terminated: a closing "---" line was found. Present && !Terminated is
	// an unterminated block; Body is then the whole document.
	Terminated bool
	// YAML is the text between the delimiter lines, with CRLF turned into LF.
	YAML string
	// YAMLLine is the 1-based line number of YAML's first line in the file.
	YAMLLine int
	// Body is everything after the closing line (or the whole document).
	Body string
	// BodyLine is the 1-based line number where Body starts.
	BodyLine int
}

var bom = []byte{0xef, 0xbb, 0xbf}

// SplitFrontmatter separates YAML frontmatter from the Markdown body. The
// block runs from a first line "---" to the next line that is "---"
// (trailing spaces, tabs and a CR are tolerated on both lines). A leading
// UTF-8 BOM is skipped. It never fails.
func SplitFrontmatter(doc []byte) Split {
	d := bytes.TrimPrefix(doc, bom)
	first, rest, ok := cutLine(d)
	if !isDelim(first) {
		return Split{Body: string(d), BodyLine: 1}
	}
	if !ok { // "---" and nothing else: unterminated
		return Split{Present: true, Body: string(d), BodyLine: 1}
	}
	var yamlLines []string
	line := 2
	for len(rest) > 0 {
		l, r, _ := cutLine(rest)
		if isDelim(l) {
			return Split{
				Present: true, Terminated: true,
				YAML:     strings.Join(yamlLines, ""),
				YAMLLine: 2,
				Body:     string(r),
				BodyLine: line + 1,
			}
		}
		yamlLines = append(yamlLines, strings.TrimSuffix(strings.TrimSuffix(string(l), "\n"), "\r")+"\n")
		rest = r
		line++
	}
	return Split{Present: true, Body: string(d), BodyLine: 1}
}

// cutLine returns the first line of b including its "\n" (if any), the
// remainder, and whether a newline ended the line.
func cutLine(b []byte) (line, rest []byte, nl bool) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1], b[i+1:], true
	}
	return b, nil, false
}

func isDelim(l []byte) bool {
	return string(bytes.TrimRight(l, " \t\r\n")) == "---"
}

// Frontmatter is a strictly parsed frontmatter block.
type Frontmatter struct {
	// Fields is the decoded mapping (nil when there was no block).
	Fields map[string]any
	// Keys are the top-level keys in document order with their lines.
	Keys []Key
	node *yaml.Node
}

// Key is a top-level frontmatter key and the file line it is on.
type Key struct {
	Name string
	Line int
}

// FrontmatterError is a strict-parse failure with the file line it refers to.
type FrontmatterError struct {
	Line int
	Msg  string
}

func (e *FrontmatterError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ParseFrontmatter parses a split block strictly: an unterminated block, a
// YAML syntax error, a root that is not a mapping, a non-string key,
// a duplicate key at any depth, or more than one YAML document is an error.
// A document without a block yields an empty Frontmatter and no error (the
// validator then reports the missing name and description).
func ParseFrontmatter(s Split) (*Frontmatter, error) {
	if !s.Present {
		return &Frontmatter{}, nil
	}
	if !s.Terminated {
		return nil, &FrontmatterError{Line: 1, Msg: "the frontmatter block opened by '---' on line 1 is never closed by a '---' line"}
	}
	if !utf8.ValidString(s.YAML) {
		return nil, &FrontmatterError{Line: s.YAMLLine, Msg: "the frontmatter is not valid UTF-8"}
	}
	dec := yaml.NewDecoder(strings.NewReader(s.YAML))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // empty block: an empty mapping
			return &Frontmatter{Fields: map[string]any{}}, nil
		}
		return nil, yamlErr(err, s.YAMLLine)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &FrontmatterError{Line: extra.Line + s.YAMLLine - 1, Msg: "the frontmatter holds more than one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlErr(err, s.YAMLLine)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return &Frontmatter{Fields: map[string]any{}}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &FrontmatterError{Line: root.Line + s.YAMLLine - 1, Msg: fmt.Sprintf("the frontmatter must be a mapping of keys to values, not a %s", kindName(root))}
	}
	if err := checkMapping(root, s.YAMLLine); err != nil {
		return nil, err
	}
	fm := &Frontmatter{node: root}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		fm.Keys = append(fm.Keys, Key{Name: k.Value, Line: k.Line + s.YAMLLine - 1})
	}
	// Decoding into a map is the library's own strict path (it too rejects
	// duplicate keys); checkMapping already gave the precise line.
	if err := root.Decode(&fm.Fields); err != nil {
		return nil, yamlErr(err, s.YAMLLine)
	}
	if fm.Fields == nil {
		fm.Fields = map[string]any{}
	}
	return fm, nil
}

// checkMapping walks every mapping (through sequences and aliases' targets
// as written) and rejects non-scalar keys and duplicate keys.
func checkMapping(n *yaml.Node, base int) error {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return &FrontmatterError{Line: k.Line + base - 1, Msg: "a frontmatter key must be a plain string"}
			}
			if k.Tag == "!!merge" {
				return &FrontmatterError{Line: k.Line + base - 1, Msg: "merge keys ('<<') are not allowed in frontmatter"}
			}
			if k.Tag != "!!str" {
				// 1:, true:, null:, 2024-01-01: are numbers, booleans, null and
				// timestamps in YAML; readers disagree about them, so refuse.
				return &FrontmatterError{Line: k.Line + base - 1, Msg: fmt.Sprintf("key %q is not a string (YAML reads it as %s); quote it if it is meant as text", k.Value, strings.TrimPrefix(k.Tag, "!!"))}
			}
			if prev, dup := seen[k.Value]; dup {
				return &FrontmatterError{Line: k.Line + base - 1, Msg: fmt.Sprintf("duplicate key %q (first defined on line %d)", k.Value, prev)}
			}
			seen[k.Value] = k.Line + base - 1
			if err := checkMapping(v, base); err != nil {
				return err
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkMapping(c, base); err != nil {
				return err
			}
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	case yaml.AliasNode:
		return "alias"
	}
	return "non-mapping"
}

// yamlErr rewrites the library's "yaml: line N: msg" into file lines.
func yamlErr(err error, base int) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil {
		if i := strings.Index(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		return &FrontmatterError{Line: line + base - 1, Msg: "YAML: " + msg}
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	return &FrontmatterError{Line: base, Msg: "YAML: " + strings.Join(strings.Fields(msg), " ")}
}
