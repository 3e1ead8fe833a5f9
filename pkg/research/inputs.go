// A start's input list (docs/research.md, "Documents and images"): the
// files as a caller names them (InputSpec) and the checked list only the
// start's Check builds (InputList), with each page or sheet range parsed
// into the processing the SDKs' DocumentContent carries.

package research

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// Range bounds: a page or sheet number beyond them is a typo, not a
// document.
const (
	MaxPageNumber  = 1_000_000
	MaxSheetNumber = 65_535
	maxRangeBytes  = 64
)

// InputSpec is one input as a caller names it: an absolute path and, for
// a document that has them, a page range or a sheet (docs/research.md,
// "Page and sheet ranges").
type InputSpec struct {
	Path  string `json:"path"`
	Pages string `json:"pages,omitempty"`
	Sheet string `json:"sheet,omitempty"`
	// Layers are the content layers to extract: a paginated document's
	// (page_image, page_text) or a spreadsheet's (visual, data,
	// formulas); Resolution the media resolution it is read at
	// (docs/research.md, "Content layers and resolution").
	Layers     []string `json:"layers,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
}

// InputList is a start's inputs. A caller builds it from specs
// (AskInputs, or JSON); only the start's Check turns it into a checked
// list (checkInputList), which is the only form Admit and Run read: a list
// that did not pass the check cannot be sent.
type InputList struct {
	specs   []InputSpec
	checked []checkedInput
	ok      bool
}

// checkedInput is one input after Check: its path and the processing its
// range asks for (kind "pages" or "sheet"; nil without a range).
type checkedInput struct {
	path       string
	kind       string
	processing *google.Processing
	resolution string
	// asks is what set kind, as a refusal names it ("a page range",
	// "page content layers", …).
	asks string
}

// AskInputs is the unchecked list of specs.
func AskInputs(specs ...InputSpec) InputList {
	return InputList{specs: append([]InputSpec(nil), specs...)}
}

// Len is the number of inputs.
func (l InputList) Len() int { return len(l.specs) }

// Specs returns a copy of the inputs as named.
func (l InputList) Specs() []InputSpec { return append([]InputSpec(nil), l.specs...) }

// MarshalJSON writes the specs: a routed start carries them, and the
// gateway's Check checks them again.
func (l InputList) MarshalJSON() ([]byte, error) {
	if len(l.specs) == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(l.specs)
}

// UnmarshalJSON reads specs: unchecked.
func (l *InputList) UnmarshalJSON(b []byte) error {
	var specs []InputSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		return err
	}
	*l = InputList{specs: specs}
	return nil
}

// IsZero lets omitempty/omitzero leave an empty list out.
func (l InputList) IsZero() bool { return len(l.specs) == 0 }

// items is the checked list. Run and Admit are only ever given what
// Check returned; an unchecked list with inputs here is a bug, not a
// request.
func (l InputList) items() []checkedInput {
	if len(l.specs) > 0 && !l.ok {
		panic("research: an input list that was not checked reached a start")
	}
	return l.checked
}

// checkInputList is the stateless check of a start's inputs: absolute,
// distinct paths, at most MaxInputs, each range well formed and only one
// of pages and sheet. Whether the type has such a range needs its
// content: the probe decides it (probeInputs).
func checkInputList(l InputList) (InputList, error) {
	if len(l.specs) > MaxInputs {
		return l, errs.Usage(CodeTooManyInputs, "%d input files; at most %d may be sent", len(l.specs), MaxInputs).
			WithHint("docs/research.md lists the input limits")
	}
	out := InputList{specs: l.Specs(), ok: true}
	seen := map[string]bool{}
	for _, s := range l.specs {
		p := s.Path
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return l, errs.Usage(errs.CodeInvalidInput, "input path %q is not absolute", p)
		}
		if seen[p] {
			return l, errs.Usage(errs.CodeInvalidInput, "input %s is given twice", p)
		}
		seen[p] = true
		in := checkedInput{path: p}
		switch {
		case s.Pages != "" && s.Sheet != "":
			return l, errs.Usage(CodeInvalidRange, "input %s has both a page range and a sheet; a document has one or the other", p)
		case s.Pages != "":
			po, err := ParsePages(s.Pages)
			if err != nil {
				return l, errs.Usage(CodeInvalidRange, "input %s: %v", p, err).
					WithHint("pages are N, N-M, N- or -M, counted from 1 (--pages 2-5)")
			}
			in.kind, in.processing, in.asks = "pages", &google.Processing{Pages: po}, "a page range"
		case s.Sheet != "":
			so, err := ParseSheet(s.Sheet)
			if err != nil {
				return l, errs.Usage(CodeInvalidRange, "input %s: %v", p, err).
					WithHint("a sheet is N or N!CELLS, counted from 1, cells in A1 notation (--sheet 2!A1:D10)")
			}
			in.kind, in.processing, in.asks = "sheet", &google.Processing{Sheet: so}, "a sheet"
		}
		if err := checkLayers(&in, s.Layers); err != nil {
			return l, err
		}
		if s.Resolution != "" {
			if !slices.Contains(google.MediaResolutions, s.Resolution) {
				return l, errs.Usage(CodeInvalidResolution, "input %s: resolution %q is not one of %s", p, s.Resolution, strings.Join(google.MediaResolutions, ", ")).
					WithHint("--resolution [FILE=]low|medium|high|ultra_high")
			}
			in.resolution = s.Resolution
		}
		out.checked = append(out.checked, in)
	}
	return out, nil
}

// checkLayers checks an input's content layers and adds them to its
// processing: all of one kind (a paginated document's or a
// spreadsheet's), each once, and of the kind of its range when it has
// one. Whether the file's type has that kind is the probe's to decide,
// as for a range (checkSniffed).
func checkLayers(in *checkedInput, layers []string) error {
	if len(layers) == 0 {
		return nil
	}
	kind := ""
	seen := map[string]bool{}
	for _, l := range layers {
		k := ""
		switch {
		case slices.Contains(google.PageLayers, l):
			k = "pages"
		case slices.Contains(google.SheetLayers, l):
			k = "sheet"
		default:
			return errs.Usage(CodeInvalidContentLayer, "input %s: content layer %q is not one of %s (pages) or %s (sheets)", in.path, l, strings.Join(google.PageLayers, ", "), strings.Join(google.SheetLayers, ", ")).
				WithHint("--layers [FILE=]page_text,page_image for a paginated document, --layers [FILE=]data,formulas,visual for a spreadsheet")
		}
		if seen[l] {
			return errs.Usage(CodeInvalidContentLayer, "input %s: content layer %s is given twice", in.path, l)
		}
		seen[l] = true
		if kind != "" && k != kind {
			return errs.Usage(CodeInvalidContentLayer, "input %s mixes a paginated document's content layers with a spreadsheet's", in.path).
				WithHint("page_image and page_text are a paginated document's; visual, data and formulas a spreadsheet's")
		}
		kind = k
	}
	if in.kind != "" && in.kind != kind {
		return errs.Usage(CodeInvalidContentLayer, "input %s has a %s range but a %s's content layers", in.path,
			map[string]string{"pages": "page", "sheet": "sheet"}[in.kind], map[string]string{"pages": "paginated document", "sheet": "spreadsheet"}[kind])
	}
	if in.kind == "" {
		in.kind, in.asks = kind, map[string]string{"pages": "page content layers", "sheet": "sheet content layers"}[kind]
	}
	if in.processing == nil {
		in.processing = &google.Processing{}
	}
	if kind == "pages" {
		if in.processing.Pages == nil {
			in.processing.Pages = &google.PageOptions{}
		}
		in.processing.Pages.ContentLayers = append([]string(nil), layers...)
	} else {
		if in.processing.Sheet == nil {
			in.processing.Sheet = &google.SheetOptions{}
		}
		in.processing.Sheet.ContentLayers = append([]string(nil), layers...)
	}
	return nil
}

// rangeError is a malformed range; its text names what is wrong.
type rangeError string

func (e rangeError) Error() string { return string(e) }

// ParsePages reads a page range: N, N-M, N- (to the end) or -M (from the
// start), 1 ≤ N ≤ M ≤ MaxPageNumber.
func ParsePages(s string) (*google.PageOptions, error) {
	if len(s) > maxRangeBytes {
		return nil, rangeError("the page range is longer than " + strconv.Itoa(maxRangeBytes) + " bytes")
	}
	from, to, isRange := strings.Cut(s, "-")
	o := &google.PageOptions{}
	var err error
	if from != "" {
		if o.StartPage, err = number(from, MaxPageNumber, "page"); err != nil {
			return nil, err
		}
	}
	if !isRange {
		if from == "" {
			return nil, rangeError("the page range is empty")
		}
		o.EndPage = o.StartPage
		return o, nil
	}
	if to != "" {
		if o.EndPage, err = number(to, MaxPageNumber, "page"); err != nil {
			return nil, err
		}
	}
	if from == "" && to == "" {
		return nil, rangeError("the page range " + strconv.Quote(s) + " names no page")
	}
	if o.StartPage != 0 && o.EndPage != 0 && o.EndPage < o.StartPage {
		return nil, rangeError("the page range " + strconv.Quote(s) + " ends before it starts")
	}
	return o, nil
}

var cellRE = regexp.MustCompile(`^([A-Z]{1,3})([1-9][0-9]{0,6})$`)

// Spreadsheet bounds of A1 notation (the largest sheet the formats hold).
const (
	maxColumn = 16384   // XFD
	maxRow    = 1048576 // 2^20
)

// ParseSheet reads a sheet: N (its index, from 1) or N!CELLS with CELLS a
// cell or a range of cells in A1 notation (A1:D10).
func ParseSheet(s string) (*google.SheetOptions, error) {
	if len(s) > maxRangeBytes {
		return nil, rangeError("the sheet is longer than " + strconv.Itoa(maxRangeBytes) + " bytes")
	}
	idx, cells, hasCells := strings.Cut(s, "!")
	n, err := number(idx, MaxSheetNumber, "sheet")
	if err != nil {
		return nil, err
	}
	o := &google.SheetOptions{SheetIndex: n}
	if !hasCells {
		return o, nil
	}
	a, b, isRange := strings.Cut(cells, ":")
	ca, ra, ok := cell(a)
	if !ok {
		return nil, rangeError("the cells " + strconv.Quote(cells) + " are not in A1 notation")
	}
	if isRange {
		cb, rb, ok := cell(b)
		if !ok {
			return nil, rangeError("the cells " + strconv.Quote(cells) + " are not in A1 notation")
		}
		if cb < ca || rb < ra {
			return nil, rangeError("the cells " + strconv.Quote(cells) + " end before they start")
		}
	}
	o.VisibleCells = cells
	return o, nil
}

// cell reads one A1 cell: its column and row numbers.
func cell(s string) (col, row int, ok bool) {
	m := cellRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	for _, c := range m[1] {
		col = col*26 + int(c-'A'+1)
	}
	row, _ = strconv.Atoi(m[2])
	return col, row, col <= maxColumn && row <= maxRow
}

// number reads a decimal from 1 to max, without sign or leading zeros.
func number(s string, max int, what string) (int, error) {
	if s == "" || len(s) > 7 || s[0] == '0' || strings.TrimLeft(s, "0123456789") != "" {
		return 0, rangeError(strconv.Quote(s) + " is not a " + what + " number (1, 2, …)")
	}
	n, _ := strconv.Atoi(s)
	if n > max {
		return 0, rangeError(what + " " + s + " is beyond the last there can be (" + strconv.Itoa(max) + ")")
	}
	return n, nil
}

// InputsFromFlags builds a start's inputs from the command line: each
// --file an absolute path; --pages and --sheet each FILE=RANGE, or only
// RANGE when one file is given (docs/research.md, "Page and sheet
// ranges"). abs resolves a path as --file's are resolved.
func InputsFromFlags(files, pages, sheets, layers, resolutions []string, abs func(string) (string, error)) (InputList, error) {
	specs := make([]InputSpec, len(files))
	index := map[string]int{}
	for i, f := range files {
		specs[i].Path = f
		index[f] = i
	}
	assign := func(flag string, vals []string, set func(*InputSpec, string) bool) error {
		for _, v := range vals {
			file, r := "", v
			if i := strings.LastIndexByte(v, '='); i >= 0 {
				file, r = v[:i], v[i+1:]
			}
			var at int
			switch {
			case file == "" && len(files) == 1:
				at = 0
			case file == "":
				return errs.Usage(CodeInvalidRange, "--%s %q names no file; with several --file give FILE=RANGE", flag, v)
			default:
				a, err := abs(file)
				if err != nil {
					return errs.Usage(errs.CodeInvalidInput, "cannot resolve --%s %s: %v", flag, file, err)
				}
				i, ok := index[a]
				if !ok {
					return errs.Usage(CodeInvalidRange, "--%s names %s, which no --file gives", flag, file)
				}
				at = i
			}
			if r == "" {
				return errs.Usage(CodeInvalidRange, "--%s %q names no range", flag, v)
			}
			if !set(&specs[at], r) {
				return errs.Usage(CodeInvalidRange, "--%s is given twice for %s", flag, specs[at].Path)
			}
		}
		return nil
	}
	if err := assign("pages", pages, func(s *InputSpec, r string) bool {
		old := s.Pages
		s.Pages = r
		return old == ""
	}); err != nil {
		return InputList{}, err
	}
	if err := assign("sheet", sheets, func(s *InputSpec, r string) bool {
		old := s.Sheet
		s.Sheet = r
		return old == ""
	}); err != nil {
		return InputList{}, err
	}
	if err := assign("layers", layers, func(s *InputSpec, r string) bool {
		old := s.Layers
		s.Layers = strings.Split(r, ",")
		return old == nil
	}); err != nil {
		return InputList{}, err
	}
	if err := assign("resolution", resolutions, func(s *InputSpec, r string) bool {
		old := s.Resolution
		s.Resolution = r
		return old == ""
	}); err != nil {
		return InputList{}, err
	}
	return AskInputs(specs...), nil
}
