package research

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
)

func TestParsePages(t *testing.T) {
	ok := map[string]google.PageOptions{"3": {StartPage: 3, EndPage: 3}, "2-5": {StartPage: 2, EndPage: 5}, "4-": {StartPage: 4}, "-7": {EndPage: 7}, "1-1000000": {StartPage: 1, EndPage: 1000000}}
	for in, want := range ok {
		got, err := ParsePages(in)
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "0", "5-2", "1-0", "01", "+1", "1--2", "a", "1-2-3", "1000001", " 1", "1,3", "１"} {
		if got, err := ParsePages(in); err == nil {
			t.Errorf("%q: accepted as %+v", in, got)
		}
	}
}

func TestParseSheet(t *testing.T) {
	ok := map[string]google.SheetOptions{"1": {SheetIndex: 1}, "2!A1:D10": {SheetIndex: 2, VisibleCells: "A1:D10"}, "3!B7": {SheetIndex: 3, VisibleCells: "B7"}, "1!XFD1048576": {SheetIndex: 1, VisibleCells: "XFD1048576"}}
	for in, want := range ok {
		got, err := ParseSheet(in)
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "!A1", "1!", "1!a1", "1!A0", "1!D10:A1", "1!A10:A1", "1!XFE1", "1!A1048577", "1!A1:", "65536", "x", "1!A1:B2:C3"} {
		if got, err := ParseSheet(in); err == nil {
			t.Errorf("%q: accepted as %+v", in, got)
		}
	}
}

// The checked list is built by Check alone: JSON gives an unchecked one,
// which a start refuses to read.
func TestInputListChecked(t *testing.T) {
	var l InputList
	if err := json.Unmarshal([]byte(`[{"path":"/a.pdf","pages":"2-3"}]`), &l); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an unchecked list was read")
			}
		}()
		l.items()
	}()
	c, err := checkInputList(l)
	if err != nil {
		t.Fatal(err)
	}
	it := c.items()
	if len(it) != 1 || it[0].kind != "pages" || it[0].processing.Pages.StartPage != 2 {
		t.Fatalf("%+v", it)
	}
	b, _ := json.Marshal(c)
	if string(b) != `[{"path":"/a.pdf","pages":"2-3"}]` {
		t.Fatalf("%s", b)
	}
	for specs, code := range map[string]errs.Code{
		`[{"path":"a.pdf"}]`:                           errs.CodeInvalidInput,
		`[{"path":"/a.pdf"},{"path":"/a.pdf"}]`:        errs.CodeInvalidInput,
		`[{"path":"/a.pdf","pages":"x"}]`:              CodeInvalidRange,
		`[{"path":"/a.xlsx","sheet":"1!Z"}]`:           CodeInvalidRange,
		`[{"path":"/a.xlsx","sheet":"1","pages":"1"}]`: CodeInvalidRange,
	} {
		var l InputList
		_ = json.Unmarshal([]byte(specs), &l)
		if _, err := checkInputList(l); errs.CodeOf(err) != code {
			t.Errorf("%s: %v, want %s", specs, err, code)
		}
	}
}

func TestInputsFromFlags(t *testing.T) {
	abs := func(p string) (string, error) { return "/w/" + filepath.Clean(p), nil }
	l, err := InputsFromFlags([]string{"/w/a.docx"}, []string{"2-3"}, nil, nil, nil, abs)
	if err != nil || l.Specs()[0].Pages != "2-3" {
		t.Fatalf("%+v %v", l, err)
	}
	l, err = InputsFromFlags([]string{"/w/a.docx", "/w/b.xlsx"}, []string{"a.docx=1"}, []string{"b.xlsx=2!A1:B2"}, nil, nil, abs)
	if err != nil || l.Specs()[0].Pages != "1" || l.Specs()[1].Sheet != "2!A1:B2" {
		t.Fatalf("%+v %v", l, err)
	}
	for _, c := range []struct{ pages, sheets []string }{
		{[]string{"1"}, nil},                    // two files, no FILE=
		{[]string{"c.docx=1"}, nil},             // no such --file
		{[]string{"a.docx=1", "a.docx=2"}, nil}, // twice
		{[]string{"a.docx="}, nil},              // empty
	} {
		if _, err := InputsFromFlags([]string{"/w/a.docx", "/w/b.xlsx"}, c.pages, c.sheets, nil, nil, abs); errs.CodeOf(err) != CodeInvalidRange {
			t.Errorf("%v %v: %v", c.pages, c.sheets, err)
		}
	}
}

func FuzzParsePages(f *testing.F) {
	for _, s := range []string{"1", "2-5", "4-", "-7", "5-2", "0", "1000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParsePages(s)
		if err != nil {
			return
		}
		if (o.StartPage == 0 && o.EndPage == 0) || o.StartPage < 0 || o.EndPage < 0 || o.StartPage > MaxPageNumber || o.EndPage > MaxPageNumber ||
			(o.StartPage > 0 && o.EndPage > 0 && o.EndPage < o.StartPage) {
			t.Fatalf("%q: accepted as %+v", s, o)
		}
	})
}

func FuzzParseSheet(f *testing.F) {
	for _, s := range []string{"1", "2!A1:D10", "3!B7", "0", "1!D10:A1", "1!XFE1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseSheet(s)
		if err != nil {
			return
		}
		if o.SheetIndex < 1 || o.SheetIndex > MaxSheetNumber || strings.ContainsAny(o.VisibleCells, " !\x00") || len(o.VisibleCells) > maxRangeBytes {
			t.Fatalf("%q: accepted as %+v", s, o)
		}
	})
}

// Content layers and a resolution: checked statelessly (each layer of the
// SDK's enums, of one kind, once, of its range's kind) and sent as the
// processing's content_layers and the block's resolution.
func TestLayersAndResolution(t *testing.T) {
	check := func(s InputSpec) (checkedInput, error) {
		l, err := checkInputList(AskInputs(s))
		if err != nil {
			return checkedInput{}, err
		}
		return l.items()[0], nil
	}
	in, err := check(InputSpec{Path: "/w/a.pdf", Layers: []string{"page_text"}, Resolution: "ultra_high"})
	if err != nil || in.kind != "pages" || in.processing == nil || in.processing.Pages == nil ||
		!reflect.DeepEqual(in.processing.Pages.ContentLayers, []string{"page_text"}) || in.processing.Pages.StartPage != 0 || in.resolution != "ultra_high" {
		t.Fatalf("%+v %v", in, err)
	}
	in, err = check(InputSpec{Path: "/w/a.xlsx", Sheet: "2!A1:B2", Layers: []string{"data", "formulas"}})
	if err != nil || in.kind != "sheet" || in.processing.Sheet.SheetIndex != 2 || !reflect.DeepEqual(in.processing.Sheet.ContentLayers, []string{"data", "formulas"}) {
		t.Fatalf("%+v %v", in, err)
	}
	for _, c := range []struct {
		spec InputSpec
		code errs.Code
	}{
		{InputSpec{Path: "/w/a.pdf", Layers: []string{"frames"}}, CodeInvalidContentLayer},                 // a video's layer
		{InputSpec{Path: "/w/a.pdf", Layers: []string{"page_text", "page_text"}}, CodeInvalidContentLayer}, // twice
		{InputSpec{Path: "/w/a.pdf", Layers: []string{"page_text", "data"}}, CodeInvalidContentLayer},      // mixed kinds
		{InputSpec{Path: "/w/a.pdf", Pages: "1-2", Layers: []string{"visual"}}, CodeInvalidContentLayer},   // not the range's kind
		{InputSpec{Path: "/w/a.pdf", Layers: []string{""}}, CodeInvalidContentLayer},
		{InputSpec{Path: "/w/a.pdf", Resolution: "HIGH"}, CodeInvalidResolution},
		{InputSpec{Path: "/w/a.pdf", Resolution: "max"}, CodeInvalidResolution},
	} {
		if _, err := check(c.spec); errs.CodeOf(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.spec, err, c.code)
		}
	}
	l, err := InputsFromFlags([]string{"/w/a.pdf", "/w/b.xlsx"}, nil, nil, []string{"a.pdf=page_image,page_text", "b.xlsx=visual"}, []string{"b.xlsx=low"}, func(p string) (string, error) { return "/w/" + p, nil })
	if s := l.Specs(); err != nil || !reflect.DeepEqual(s[0].Layers, []string{"page_image", "page_text"}) || !reflect.DeepEqual(s[1].Layers, []string{"visual"}) || s[1].Resolution != "low" || s[0].Resolution != "" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := InputsFromFlags([]string{"/w/a.pdf"}, nil, nil, []string{"page_text", "page_image"}, nil, nil); errs.CodeOf(err) != CodeInvalidRange {
		t.Fatalf("--layers twice for one file: %v", err)
	}
}
