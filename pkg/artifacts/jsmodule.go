package artifacts

import "strings"

// jsModule is what inventory.go needs from one compiled ES module: its
// top-level constant declarations, its named imports and exports, and its
// tokens (to find function bodies).
type jsModule struct {
	toks []jsTok
	// decls maps a top-level name to every declaration of it (more than one
	// means the name is ambiguous).
	decls map[string][]jsDecl
	// imports maps a local name to where it comes from.
	imports map[string]jsImport
	// exports maps an exported name to the local name (or re-export).
	exports map[string][]jsExport
}

// jsDecl is one top-level declaration. Only `const NAME = "literal"` and
// `const NAME = [elements]` have a static value; anything else (let, var,
// functions, computed values) is recorded with Static false.
type jsDecl struct {
	Static bool
	Str    *string   // a string literal (raw body; only accepted without escapes)
	Elems  []jsValue // an array literal of string literals and identifiers
	IsArr  bool
}

// jsValue is one element of an array literal.
type jsValue struct {
	Str   *string
	Ident string
}

type jsImport struct {
	Name string // exported name in the source module ("*" or "default" are never followed)
	From string
}

type jsExport struct {
	Local string
	From  string // set for `export { a as b } from "…"`
}

func parseJSModule(src string) (*jsModule, error) {
	toks, err := lexJS(src)
	if err != nil {
		return nil, err
	}
	m := &jsModule{toks: toks, decls: map[string][]jsDecl{}, imports: map[string]jsImport{}, exports: map[string][]jsExport{}}
	is := func(i int, k jsKind, v string) bool {
		return i < len(toks) && toks[i].Kind == k && (v == "" || toks[i].Val == v)
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.Depth != 0 || t.Kind != jsIdent {
			continue
		}
		// A keyword used as a property name (x.import) is not a statement.
		if i > 0 && is(i-1, jsPunct, ".") {
			continue
		}
		switch t.Val {
		case "import":
			if !is(i+1, jsPunct, "{") {
				// default or namespace imports: record their locals as
				// unfollowable so a lookup of them fails loudly.
				j := i + 1
				for j < len(toks) && !is(j, jsIdent, "from") && !is(j, jsPunct, ";") && !is(j, jsString, "") {
					if toks[j].Kind == jsIdent && toks[j].Val != "as" && toks[j].Val != "type" {
						if is(j+1, jsIdent, "from") || is(j+1, jsPunct, ",") {
							m.imports[toks[j].Val] = jsImport{Name: "*"}
						}
					}
					j++
				}
				continue
			}
			names, j, ok := parseBindings(toks, i+2)
			if !ok || !is(j, jsIdent, "from") || !is(j+1, jsString, "") {
				continue
			}
			for _, b := range names {
				m.imports[b[1]] = jsImport{Name: b[0], From: toks[j+1].Val}
			}
		case "export":
			if is(i+1, jsPunct, "{") {
				names, j, ok := parseBindings(toks, i+2)
				if !ok {
					continue
				}
				from := ""
				if is(j, jsIdent, "from") && is(j+1, jsString, "") {
					from = toks[j+1].Val
				}
				for _, b := range names {
					m.exports[b[1]] = append(m.exports[b[1]], jsExport{Local: b[0], From: from})
				}
			}
		case "const", "let", "var":
			i = m.parseDecl(toks, i)
		case "function", "class":
			j := i + 1
			if is(j, jsPunct, "*") {
				j++
			}
			if is(j, jsIdent, "") {
				m.decls[toks[j].Val] = append(m.decls[toks[j].Val], jsDecl{})
			}
		}
	}
	return m, nil
}

// parseBindings reads "a as b, c }" starting after "{" and returns pairs
// [exported-or-imported name, local/alias name] and the index after "}".
func parseBindings(toks []jsTok, i int) ([][2]string, int, bool) {
	var out [][2]string
	for i < len(toks) {
		if toks[i].Kind == jsPunct && toks[i].Val == "}" {
			return out, i + 1, true
		}
		if toks[i].Kind == jsIdent && toks[i].Val == "type" && i+1 < len(toks) && toks[i+1].Kind == jsIdent && toks[i+1].Val != "as" {
			i++ // TypeScript "type X" (not emitted by the bundler, but harmless)
		}
		var name string
		switch toks[i].Kind {
		case jsIdent:
			name = toks[i].Val
		case jsString:
			name = toks[i].Val
		default:
			return nil, i, false
		}
		alias := name
		i++
		if i+1 < len(toks) && toks[i].Kind == jsIdent && toks[i].Val == "as" {
			if toks[i+1].Kind != jsIdent && toks[i+1].Kind != jsString {
				return nil, i, false
			}
			alias = toks[i+1].Val
			i += 2
		}
		out = append(out, [2]string{name, alias})
		if i < len(toks) && toks[i].Kind == jsPunct && toks[i].Val == "," {
			i++
		}
	}
	return nil, i, false
}

// parseDecl records the declarators of the const/let/var at toks[i] and
// returns the index of the last token it consumed. Only simple values are
// static; anything else is recorded as a non-static declaration of the name.
func (m *jsModule) parseDecl(toks []jsTok, i int) int {
	static := toks[i].Val == "const"
	j := i + 1
	for {
		if j >= len(toks) || toks[j].Kind != jsIdent {
			// destructuring or something unexpected: names inside are not
			// needed; skip the statement.
			return j - 1
		}
		name := toks[j].Val
		j++
		if j >= len(toks) || toks[j].Kind != jsPunct || toks[j].Val != "=" {
			m.decls[name] = append(m.decls[name], jsDecl{})
			if j < len(toks) && toks[j].Kind == jsPunct && toks[j].Val == "," {
				j++
				continue
			}
			return j - 1
		}
		j++
		d, next, ok := parseSimpleValue(toks, j)
		if ok && static && next < len(toks) && toks[next].Kind == jsPunct && (toks[next].Val == ";" || toks[next].Val == ",") {
			d.Static = true
			m.decls[name] = append(m.decls[name], d)
			if toks[next].Val == "," {
				j = next + 1
				continue
			}
			return next
		}
		m.decls[name] = append(m.decls[name], jsDecl{})
		// Skip the rest of this declarator at this depth; another
		// declarator after a top-level "," is not followed (the bundler does
		// not emit them for the names we read).
		return j - 1
	}
}

func parseSimpleValue(toks []jsTok, j int) (jsDecl, int, bool) {
	if j >= len(toks) {
		return jsDecl{}, j, false
	}
	t := toks[j]
	if t.Kind == jsString {
		s := t.Val
		return jsDecl{Str: &s}, j + 1, true
	}
	if t.Kind != jsPunct || t.Val != "[" {
		return jsDecl{}, j, false
	}
	d := jsDecl{IsArr: true}
	j++
	for j < len(toks) {
		t := toks[j]
		switch {
		case t.Kind == jsPunct && t.Val == "]":
			return d, j + 1, true
		case t.Kind == jsString:
			s := t.Val
			d.Elems = append(d.Elems, jsValue{Str: &s})
		case t.Kind == jsIdent:
			d.Elems = append(d.Elems, jsValue{Ident: t.Val})
		default:
			return jsDecl{}, j, false
		}
		j++
		if j < len(toks) && toks[j].Kind == jsPunct && toks[j].Val == "," {
			j++
			continue
		}
		if j < len(toks) && toks[j].Kind == jsPunct && toks[j].Val == "]" {
			continue
		}
		return jsDecl{}, j, false
	}
	return jsDecl{}, j, false
}

// functionBody returns the tokens of the body of every top-level
// `function NAME(` (async or generator included) in the module.
func (m *jsModule) functionBodies(name string) [][]jsTok {
	var out [][]jsTok
	toks := m.toks
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].Depth != 0 || toks[i].Kind != jsIdent || toks[i].Val != "function" {
			continue
		}
		j := i + 1
		if toks[j].Kind == jsPunct && toks[j].Val == "*" {
			j++
		}
		if toks[j].Kind != jsIdent || toks[j].Val != name {
			continue
		}
		// Find the body's "{" at depth 0 after the parameter list.
		k := j + 1
		paren := 0
		for k < len(toks) {
			if toks[k].Kind == jsPunct {
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
		for e < len(toks) && !(toks[e].Kind == jsPunct && toks[e].Val == "}" && toks[e].Depth == 0) {
			e++
		}
		out = append(out, toks[k+1:e])
	}
	return out
}

// hasTemplate reports whether any template literal in toks contains sub.
func hasTemplate(toks []jsTok, sub string) bool {
	for _, t := range toks {
		if t.Kind == jsTemplate && strings.Contains(t.Val, sub) {
			return true
		}
	}
	return false
}
