package jslex

import "strings"

// Module is what the inventory reader (pkg/artifacts) needs from one
// compiled ES module: its
// top-level constant declarations, its named imports and exports, and its
// tokens (to find function bodies).
type Module struct {
	toks []Token
	// decls maps a top-level name to every declaration of it (more than one
	// means the name is ambiguous).
	Decls map[string][]Decl
	// imports maps a local name to where it comes from.
	Imports map[string]Import
	// exports maps an exported name to the local name (or re-export).
	Exports map[string][]Export
}

// Decl is one top-level declaration. Only `const NAME = "literal"` and
// `const NAME = [elements]` have a static value; anything else (let, var,
// functions, computed values) is recorded with Static false.
type Decl struct {
	Static bool
	Str    *string // a string literal (raw body; only accepted without escapes)
	Elems  []Value // an array literal of string literals and identifiers
	IsArr  bool
}

// Value is one element of an array literal.
type Value struct {
	Str   *string
	Ident string
}

// Import is where an imported name comes from.
type Import struct {
	Name string // exported name in the source module ("*" or "default" are never followed)
	From string
}

// Export is the local name (or re-exported module) behind an exported name.
type Export struct {
	Local string
	From  string // set for `export { a as b } from "…"`
}

// ParseModule lexes src and records its top-level declarations, imports
// and exports.
func ParseModule(src string) (*Module, error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	m := &Module{toks: toks, Decls: map[string][]Decl{}, Imports: map[string]Import{}, Exports: map[string][]Export{}}
	is := func(i int, k Kind, v string) bool {
		return i < len(toks) && toks[i].Kind == k && (v == "" || toks[i].Val == v)
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.Depth != 0 || t.Kind != Ident {
			continue
		}
		// A keyword used as a property name (x.import) is not a statement.
		if i > 0 && is(i-1, Punct, ".") {
			continue
		}
		switch t.Val {
		case "import":
			if !is(i+1, Punct, "{") {
				// default or namespace imports: record their locals as
				// unfollowable so a lookup of them fails loudly.
				j := i + 1
				for j < len(toks) && !is(j, Ident, "from") && !is(j, Punct, ";") && !is(j, String, "") {
					if toks[j].Kind == Ident && toks[j].Val != "as" && toks[j].Val != "type" {
						if is(j+1, Ident, "from") || is(j+1, Punct, ",") {
							m.Imports[toks[j].Val] = Import{Name: "*"}
						}
					}
					j++
				}
				continue
			}
			names, j, ok := parseBindings(toks, i+2)
			if !ok || !is(j, Ident, "from") || !is(j+1, String, "") {
				continue
			}
			for _, b := range names {
				m.Imports[b[1]] = Import{Name: b[0], From: toks[j+1].Val}
			}
		case "export":
			if is(i+1, Punct, "{") {
				names, j, ok := parseBindings(toks, i+2)
				if !ok {
					continue
				}
				from := ""
				if is(j, Ident, "from") && is(j+1, String, "") {
					from = toks[j+1].Val
				}
				for _, b := range names {
					m.Exports[b[1]] = append(m.Exports[b[1]], Export{Local: b[0], From: from})
				}
			}
		case "const", "let", "var":
			i = m.parseDecl(toks, i)
		case "function", "class":
			j := i + 1
			if is(j, Punct, "*") {
				j++
			}
			if is(j, Ident, "") {
				m.Decls[toks[j].Val] = append(m.Decls[toks[j].Val], Decl{})
			}
		}
	}
	return m, nil
}

// parseBindings reads "a as b, c }" starting after "{" and returns pairs
// [exported-or-imported name, local/alias name] and the index after "}".
func parseBindings(toks []Token, i int) ([][2]string, int, bool) {
	var out [][2]string
	for i < len(toks) {
		if toks[i].Kind == Punct && toks[i].Val == "}" {
			return out, i + 1, true
		}
		if toks[i].Kind == Ident && toks[i].Val == "type" && i+1 < len(toks) && toks[i+1].Kind == Ident && toks[i+1].Val != "as" {
			i++ // TypeScript "type X" (not emitted by the bundler, but harmless)
		}
		var name string
		switch toks[i].Kind {
		case Ident:
			name = toks[i].Val
		case String:
			name = toks[i].Val
		default:
			return nil, i, false
		}
		alias := name
		i++
		if i+1 < len(toks) && toks[i].Kind == Ident && toks[i].Val == "as" {
			if toks[i+1].Kind != Ident && toks[i+1].Kind != String {
				return nil, i, false
			}
			alias = toks[i+1].Val
			i += 2
		}
		out = append(out, [2]string{name, alias})
		if i < len(toks) && toks[i].Kind == Punct && toks[i].Val == "," {
			i++
		}
	}
	return nil, i, false
}

// parseDecl records the declarators of the const/let/var at toks[i] and
// returns the index of the last token it consumed. Only simple values are
// static; anything else is recorded as a non-static declaration of the name.
func (m *Module) parseDecl(toks []Token, i int) int {
	static := toks[i].Val == "const"
	j := i + 1
	for {
		if j >= len(toks) || toks[j].Kind != Ident {
			// destructuring or something unexpected: names inside are not
			// needed; skip the statement.
			return j - 1
		}
		name := toks[j].Val
		j++
		if j >= len(toks) || toks[j].Kind != Punct || toks[j].Val != "=" {
			m.Decls[name] = append(m.Decls[name], Decl{})
			if j < len(toks) && toks[j].Kind == Punct && toks[j].Val == "," {
				j++
				continue
			}
			return j - 1
		}
		j++
		d, next, ok := parseSimpleValue(toks, j)
		if ok && static && next < len(toks) && toks[next].Kind == Punct && (toks[next].Val == ";" || toks[next].Val == ",") {
			d.Static = true
			m.Decls[name] = append(m.Decls[name], d)
			if toks[next].Val == "," {
				j = next + 1
				continue
			}
			return next
		}
		m.Decls[name] = append(m.Decls[name], Decl{})
		// Skip the rest of this declarator at this depth; another
		// declarator after a top-level "," is not followed (the bundler does
		// not emit them for the names we read).
		return j - 1
	}
}

func parseSimpleValue(toks []Token, j int) (Decl, int, bool) {
	if j >= len(toks) {
		return Decl{}, j, false
	}
	t := toks[j]
	if t.Kind == String {
		s := t.Val
		return Decl{Str: &s}, j + 1, true
	}
	if t.Kind != Punct || t.Val != "[" {
		return Decl{}, j, false
	}
	d := Decl{IsArr: true}
	j++
	for j < len(toks) {
		t := toks[j]
		switch {
		case t.Kind == Punct && t.Val == "]":
			return d, j + 1, true
		case t.Kind == String:
			s := t.Val
			d.Elems = append(d.Elems, Value{Str: &s})
		case t.Kind == Ident:
			d.Elems = append(d.Elems, Value{Ident: t.Val})
		default:
			return Decl{}, j, false
		}
		j++
		if j < len(toks) && toks[j].Kind == Punct && toks[j].Val == "," {
			j++
			continue
		}
		if j < len(toks) && toks[j].Kind == Punct && toks[j].Val == "]" {
			continue
		}
		return Decl{}, j, false
	}
	return Decl{}, j, false
}

// FunctionBodies returns the tokens of the body of every top-level
// `function NAME(` (async or generator included) in the module.
func (m *Module) FunctionBodies(name string) [][]Token {
	var out [][]Token
	toks := m.toks
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].Depth != 0 || toks[i].Kind != Ident || toks[i].Val != "function" {
			continue
		}
		j := i + 1
		if toks[j].Kind == Punct && toks[j].Val == "*" {
			j++
		}
		if toks[j].Kind != Ident || toks[j].Val != name {
			continue
		}
		// Find the body's "{" at depth 0 after the parameter list.
		k := j + 1
		paren := 0
		for k < len(toks) {
			if toks[k].Kind == Punct {
				switch toks[k].Val {
				case "(":
					paren++
				case ")":
					paren--
				}
				if paren == 0 && toks[k].Val == "{" && toks[k].Depth == 0 {
					break
				}
			}
			k++
		}
		if k >= len(toks) {
			continue
		}
		e := k + 1
		for e < len(toks) && (toks[e].Kind != Punct || toks[e].Val != "}" || toks[e].Depth != 0) {
			e++
		}
		out = append(out, toks[k+1:e])
	}
	return out
}

// HasTemplate reports whether any template literal in toks contains sub.
func HasTemplate(toks []Token, sub string) bool {
	for _, t := range toks {
		if t.Kind == Template && strings.Contains(t.Val, sub) {
			return true
		}
	}
	return false
}
