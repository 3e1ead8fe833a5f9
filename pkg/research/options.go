// Options of a start beyond the question (docs/research.md, "Start
// options"): plan review, document and image inputs, tools and
// visualization. What a job records of them is names, sizes, digests and
// profile ids: never input bytes and never a header's value.

package research

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// Input bounds (docs/research.md, "Documents and images"). The request
// carries the bytes base64 encoded (4/3 of their size), so the total stays
// well under the API's limit for an inline request.
const (
	MaxInputs          = 8
	MaxInputBytes      = 4 << 20
	MaxInputTotalBytes = 12 << 20
)

// Tool bounds.
const (
	MaxFileSearchStores = 8
	MaxMCPServers       = 4
	MaxMCPHeaders       = 8
	maxToolNameBytes    = 256
	maxToolURLBytes     = 2048
)

// Visualization values (the SDKs' Visualization enum).
const (
	VisualizationAuto = "auto"
	VisualizationOff  = "off"
)

// JobOptions are a job's recorded options.
type JobOptions struct {
	// Plan: the job was started with collaborative planning.
	Plan bool `json:"plan,omitempty"`
	// Revision is the text the approve sent with the confirming turn.
	Revision      string        `json:"revision,omitempty"`
	Visualization string        `json:"visualization,omitempty"`
	Inputs        []InputRecord `json:"inputs,omitempty"`
	Tools         *Tools        `json:"tools,omitempty"`
	// MaxTokens is the job's token budget (0: none): clawkit cancels the
	// job once its reported usage passes it.
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// KeepUploads: the files uploaded for the job are not deleted when
	// it ends.
	KeepUploads bool `json:"keepUploads,omitempty"`
	// Uploading: the job's inputs are being uploaded and its create has
	// not been sent (uploads.go).
	Uploading bool `json:"uploading,omitempty"`
}

// InputRecord is what the binding keeps of an input file. An uploaded
// one also has its Files API name and uri (SHA-256 is that of the bytes
// uploaded), whether it was deleted, and while it uploads its progress.
type InputRecord struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	MimeType string `json:"mimeType"`
	Pages    string `json:"pages,omitempty"`
	Sheet    string `json:"sheet,omitempty"`
	// Layers and Resolution are the content layers and media resolution
	// it was sent with.
	Layers     []string `json:"layers,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
	// Upload: sent through the Files API, not inline.
	Upload   bool            `json:"upload,omitempty"`
	File     string          `json:"file,omitempty"`
	URI      string          `json:"uri,omitempty"`
	Deleted  bool            `json:"deleted,omitempty"`
	Progress *UploadProgress `json:"progress,omitempty"`
}

// Tools are the tools a start declares (the contract's "tools" and the
// job's record alike: header values are named by profile, never given).
type Tools struct {
	FileSearch []string    `json:"fileSearch,omitempty"`
	URLContext bool        `json:"urlContext,omitempty"`
	MCPServers []MCPServer `json:"mcpServers,omitempty"`
}

// MCPServer is an mcp_server tool: its name, URL and the headers whose
// values come from header profiles.
type MCPServer struct {
	Name    string      `json:"name"`
	URL     string      `json:"url"`
	Headers []HeaderRef `json:"headers,omitempty"`
}

// HeaderRef names a header and the auth profile (kind header) holding its
// value.
type HeaderRef struct {
	Header  string `json:"header"`
	Profile string `json:"profile"`
}

func (o *JobOptions) empty() bool {
	return o == nil || (!o.Plan && o.Revision == "" && o.Visualization == "" && len(o.Inputs) == 0 && o.Tools == nil && o.MaxTokens == 0 && !o.KeepUploads)
}

// storedOptions is JobOptions as the job store keeps them: with the
// upload sessions beside the inputs, so the view of a job (research
// show, --json, result.json) never carries a session URL (uploads.go).
type storedOptions struct {
	*JobOptions
	UploadSessions []string `json:"uploadSessions,omitempty"`
}

func encodeOptions(o *JobOptions) string {
	if o.empty() {
		return ""
	}
	st := storedOptions{JobOptions: o}
	for i, in := range o.Inputs {
		if in.Progress != nil && in.Progress.Session != "" {
			if st.UploadSessions == nil {
				st.UploadSessions = make([]string, len(o.Inputs))
			}
			st.UploadSessions[i] = in.Progress.Session
		}
	}
	b, _ := json.Marshal(st)
	return string(b)
}

func decodeOptions(s string) (*JobOptions, error) {
	if s == "" {
		return nil, nil
	}
	st := storedOptions{JobOptions: &JobOptions{}}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return nil, storeErr("read the research job's options", err)
	}
	o := st.JobOptions
	for i, sess := range st.UploadSessions {
		if i < len(o.Inputs) && o.Inputs[i].Progress != nil {
			o.Inputs[i].Progress.Session = sess
		}
	}
	return o, nil
}

// plan reports whether j asks for collaborative planning.
func (j *Job) plan() bool { return j.Options != nil && j.Options.Plan }

// inPlanTurn reports whether j's interaction is its plan turn: a job
// started with --plan whose plan has not been proposed yet.
func (j *Job) inPlanTurn() bool { return j.plan() && j.PlanHandle == "" }

func (j *Job) visualization() string {
	if j.Options == nil {
		return ""
	}
	return j.Options.Visualization
}

// checkVisualization refuses a value the SDKs' enum does not name.
func checkVisualization(v string) error {
	switch v {
	case "", VisualizationAuto, VisualizationOff:
		return nil
	}
	return errs.Usage(CodeInvalidVisualization, "visualization %q is not one of auto, off", v).
		WithHint("--visualization auto saves the report's charts and images under figures/")
}

// probeInputs checks every input without reading it whole: a regular
// file (a symbolic link is refused), within the upload bound, of a type
// the SDKs name (read from its content), and with a range only of the
// kind its type has. Start reads each file again, and checks it again on
// the bytes it sends.
func probeInputs(l InputList) error {
	_, err := planInputs(l)
	return err
}

// plannedInput is one input as probed: its type, its size and whether
// it goes inline or through the Files API.
type plannedInput struct {
	checkedInput
	mime   string
	size   int64
	upload bool
}

// planInputs admits each input and decides how it is sent: inline while
// it fits the inline bounds (per file and in all, in order), else
// uploaded.
func planInputs(l InputList) ([]plannedInput, error) {
	var out []plannedInput
	var inline int64
	for _, in := range l.items() {
		f, err := fsx.OpenRegular(in.path)
		if err != nil {
			return nil, inputErr(in.path, err)
		}
		st, err := f.Stat()
		if err != nil {
			fsx.CloseRead(f)
			return nil, inputErr(in.path, err)
		}
		if st.Size() > MaxUploadBytes {
			fsx.CloseRead(f)
			return nil, errUploadTooLarge(in.path, st.Size())
		}
		mime := SniffFile(f, st.Size())
		fsx.CloseRead(f)
		if err := checkSniffed(in, mime); err != nil {
			return nil, err
		}
		pi := plannedInput{checkedInput: in, mime: mime, size: st.Size()}
		if st.Size() > MaxInputBytes || inline+st.Size() > MaxInputTotalBytes {
			pi.upload = true
		} else {
			inline += st.Size()
		}
		out = append(out, pi)
	}
	return out, nil
}

// checkSniffed refuses an input whose content is no type the SDKs name,
// or whose range its type does not have.
func checkSniffed(in checkedInput, mime string) error {
	if mime == "" {
		return errUnsupported(in.path)
	}
	if in.kind != "" && rangeKind(mime) != in.kind {
		what := in.asks
		has := "neither pages nor sheets"
		switch rangeKind(mime) {
		case "pages":
			has = "pages, not sheets (--pages)"
		case "sheet":
			has = "sheets, not pages (--sheet)"
		}
		return errs.Usage(CodeRangeNotApplicable, "input %s is %s, which has %s; %s does not apply", in.path, mime, has, what).
			WithHint("pages (and page_image, page_text) apply to PDF, Word, PowerPoint and OpenDocument text and presentations; a sheet (and visual, data, formulas) to Excel and OpenDocument spreadsheets")
	}
	return nil
}

func errUnsupported(p string) error {
	return errs.Usage(CodeUnsupportedInputType, "input %s is not a document or image of a type the provider accepts (by its content)", p).
		WithHint("supported: %s, %s", strings.Join(google.DocumentMimeTypes, ", "), strings.Join(google.ImageMimeTypes, ", "))
}

// input is one input as read for sending: inline bytes, or the path of a
// file to upload.
type input struct {
	rec        InputRecord
	data       []byte
	path       string
	processing *google.Processing
}

// readInputs admits the inputs again and reads each inline one once
// (bounded, refusing links): the bytes sent are those whose name, size,
// type and SHA-256 the binding records. An uploaded one is read while it
// uploads (uploads.go).
func readInputs(l InputList) ([]input, error) {
	plan, err := planInputs(l)
	if err != nil {
		return nil, err
	}
	var out []input
	for i, pi := range plan {
		spec := l.specs[i]
		in := input{path: pi.path, processing: pi.processing,
			rec: InputRecord{Name: filepath.Base(pi.path), Size: pi.size, MimeType: pi.mime, Pages: spec.Pages, Sheet: spec.Sheet,
				Layers: spec.Layers, Resolution: spec.Resolution, Upload: pi.upload}}
		if !pi.upload {
			data, err := fsx.ReadRegular(pi.path, MaxInputBytes)
			if errors.Is(err, fsx.ErrTooLarge) {
				return nil, errs.Usage(CodeInputChanged, "input %s grew while it was being read", pi.path)
			}
			if err != nil {
				return nil, inputErr(pi.path, err)
			}
			if m := SniffFile(bytes.NewReader(data), int64(len(data))); m != pi.mime || int64(len(data)) != pi.size {
				return nil, errs.Usage(CodeInputChanged, "input %s changed while it was being read", pi.path)
			}
			sum := sha256.Sum256(data)
			in.data, in.rec.SHA256 = data, hex.EncodeToString(sum[:])
		}
		out = append(out, in)
	}
	return out, nil
}

func inputErr(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errs.Usage(CodeInputUnreadable, "input %s does not exist", p)
	case errors.Is(err, fsx.ErrNotRegular):
		return errs.Usage(CodeInputUnreadable, "input %s: %v", p, err)
	case errors.Is(err, syscall.ELOOP):
		return errs.Usage(CodeInputUnreadable, "input %s is a symbolic link; it is not followed", p).
			WithHint("name the file itself")
	}
	return errs.Usage(CodeInputUnreadable, "cannot read input %s: %v", p, err).
		WithHint("a symbolic link is not followed: name the file itself")
}

// SniffMIME returns the MIME type of data among the SDKs' document and
// image types, from the content alone ("" when it is none of them).
func SniffMIME(data []byte, prefix bool) string {
	if len(data) == 0 {
		return ""
	}
	switch {
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return "image/tiff"
	case len(data) >= 12 && string(data[4:8]) == "ftyp":
		switch string(data[8:12]) {
		case "heic", "heix", "hevc", "hevx":
			return "image/heic"
		case "mif1", "msf1", "heif":
			return "image/heif"
		}
		return ""
	}
	ct := strings.SplitN(http.DetectContentType(data), ";", 2)[0]
	switch ct {
	case "application/pdf", "image/png", "image/jpeg", "image/webp", "image/gif", "image/bmp":
		return ct
	case "text/plain":
		if looksCSV(data, prefix) {
			return "text/csv"
		}
	}
	return ""
}

// looksCSV: valid UTF-8 text that parses as CSV with at least two fields
// in every record, all records of the same width.
func looksCSV(data []byte, prefix bool) bool {
	if prefix {
		if i := bytes.LastIndexByte(data, '\n'); i > 0 {
			data = data[:i+1]
		}
	}
	if !utf8.Valid(data) {
		return false
	}
	r := csv.NewReader(bytes.NewReader(data))
	recs, err := r.ReadAll()
	if err != nil || len(recs) == 0 {
		return false
	}
	return len(recs[0]) >= 2
}

// checkTools is the stateless check of a start's tools.
func checkTools(t *Tools) error {
	if t == nil {
		return nil
	}
	if len(t.FileSearch) > MaxFileSearchStores {
		return errs.Usage(CodeInvalidTool, "%d file search stores; at most %d", len(t.FileSearch), MaxFileSearchStores)
	}
	for _, s := range t.FileSearch {
		if s == "" || len(s) > maxToolNameBytes || strings.ContainsAny(s, " \t\r\n\x00") {
			return errs.Usage(CodeInvalidTool, "file search store %q is not a store name", s).
				WithHint("a store name looks like fileSearchStores/NAME")
		}
	}
	if len(t.MCPServers) > MaxMCPServers {
		return errs.Usage(CodeInvalidTool, "%d MCP servers; at most %d", len(t.MCPServers), MaxMCPServers)
	}
	names := map[string]bool{}
	for _, m := range t.MCPServers {
		if m.Name == "" || len(m.Name) > maxToolNameBytes || strings.ContainsAny(m.Name, " \t\r\n\x00=:") {
			return errs.Usage(CodeInvalidTool, "MCP server name %q is empty or has spaces, '=' or ':'", m.Name)
		}
		if names[m.Name] {
			return errs.Usage(CodeInvalidTool, "MCP server %s is declared twice", m.Name)
		}
		names[m.Name] = true
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(m.URL) > maxToolURLBytes {
			return errs.Usage(CodeInvalidTool, "MCP server %s: %q is not an http(s) URL", m.Name, redact.URL(m.URL))
		}
		if redact.URL(m.URL) != m.URL || u.User != nil {
			// A credential in the URL would be stored and shown with the
			// job: it belongs in a header profile.
			return errs.Usage(CodeSecretInURL, "MCP server %s: the URL carries a credential (%s)", m.Name, redact.URL(m.URL)).
				WithHint("put the credential in a header profile: clawkit auth add ID --provider mcp --kind header --api-key-env VAR, then --mcp-header %s:HEADER=@ID", m.Name)
		}
		if len(m.Headers) > MaxMCPHeaders {
			return errs.Usage(CodeInvalidTool, "MCP server %s: %d headers; at most %d", m.Name, len(m.Headers), MaxMCPHeaders)
		}
		seen := map[string]bool{}
		for _, h := range m.Headers {
			if !validHeaderName(h.Header) {
				return errs.Usage(CodeInvalidTool, "MCP server %s: %q is not a header name", m.Name, h.Header)
			}
			if seen[strings.ToLower(h.Header)] {
				return errs.Usage(CodeInvalidTool, "MCP server %s: header %s is given twice", m.Name, h.Header)
			}
			seen[strings.ToLower(h.Header)] = true
			if err := auth.ValidateID(h.Profile); err != nil {
				return err
			}
		}
	}
	return nil
}

func validHeaderName(h string) bool {
	if h == "" || len(h) > 128 {
		return false
	}
	for _, r := range h {
		if !(r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// resolveTools turns declared tools into the request's, reading each
// header's value from its profile (kind header) in home's credentials.
// It returns the values too, to be removed from any text shown.
func resolveTools(home string, t *Tools) ([]google.Tool, []string, error) {
	if t == nil {
		return nil, nil, nil
	}
	var out []google.Tool
	var secrets []string
	if len(t.FileSearch) > 0 {
		out = append(out, google.Tool{FileSearchStores: t.FileSearch})
	}
	if t.URLContext {
		out = append(out, google.Tool{URLContext: true})
	}
	var creds *auth.Store
	for _, m := range t.MCPServers {
		srv := &google.MCPServer{Name: m.Name, URL: m.URL}
		for _, h := range m.Headers {
			if creds == nil {
				var err error
				if creds, err = auth.Load(home); err != nil {
					return nil, nil, err
				}
			}
			p, ok := creds.Get(h.Profile)
			if !ok {
				return nil, nil, errs.Refused(CodeHeaderProfileMissing, "MCP server %s: header %s names auth profile %q, which does not exist", m.Name, h.Header, h.Profile).
					WithHint("clawkit auth add %s --provider mcp --kind header --api-key-env VAR", h.Profile)
			}
			// The header kinds are auth's (header: the value as is;
			// bearer: "Bearer TOKEN"), the same as mcp --header reads.
			if !auth.IsHeaderKind(p.Kind) {
				return nil, nil, errs.Refused(CodeHeaderProfileWrongKind, "MCP server %s: auth profile %q is of kind %s, not header or bearer", m.Name, h.Profile, p.Kind).
					WithHint("a header's value comes only from a profile of kind header (or bearer for a token): clawkit auth add ID --provider mcp --kind header --api-key-env VAR")
			}
			v, err := auth.HeaderValue(p)
			if err != nil {
				return nil, nil, err
			}
			if srv.Headers == nil {
				srv.Headers = map[string]string{}
			}
			srv.Headers[h.Header] = v
			secrets = append(secrets, p.Secret)
		}
		out = append(out, google.Tool{MCPServer: srv})
	}
	return out, secrets, nil
}

// ToolsFromFlags builds a start's tools from the command line's flags:
// --file-search STORE, --url-context, --mcp-server NAME=URL and
// --mcp-header NAME:HEADER=@PROFILE. A header's value is only ever named
// by its profile: a literal value is refused, so no secret is ever taken
// from a command line (docs/research.md, "Tools").
func ToolsFromFlags(stores []string, urlContext bool, servers, headers []string) (*Tools, error) {
	if len(stores) == 0 && !urlContext && len(servers) == 0 && len(headers) == 0 {
		return nil, nil
	}
	t := &Tools{FileSearch: stores, URLContext: urlContext}
	index := map[string]int{}
	for _, s := range servers {
		name, u, ok := strings.Cut(s, "=")
		if !ok || name == "" || u == "" {
			return nil, errs.Usage(CodeInvalidTool, "--mcp-server %q is not NAME=URL", redact.URLsIn(s))
		}
		if _, dup := index[name]; dup {
			return nil, errs.Usage(CodeInvalidTool, "MCP server %s is declared twice", name)
		}
		index[name] = len(t.MCPServers)
		t.MCPServers = append(t.MCPServers, MCPServer{Name: name, URL: u})
	}
	for _, h := range headers {
		ref, value, ok := strings.Cut(h, "=")
		name, header, ok2 := strings.Cut(ref, ":")
		if !ok || !ok2 || name == "" || header == "" {
			return nil, errs.Usage(CodeInvalidTool, "--mcp-header is not NAME:HEADER=@PROFILE").
				WithHint("--mcp-header search:Authorization=@mcp:search-token")
		}
		if !strings.HasPrefix(value, "@") || len(value) < 2 {
			// Never echo the value: it may be the secret itself.
			return nil, errs.Usage(CodeHeaderValueLiteral, "--mcp-header %s:%s gives a value; a header's value comes only from an auth profile of kind header", name, header).
				WithHint("clawkit auth add ID --provider mcp --kind header --api-key-env VAR, then --mcp-header %s:%s=@ID", name, header)
		}
		i, found := index[name]
		if !found {
			return nil, errs.Usage(CodeInvalidTool, "--mcp-header names MCP server %s, which no --mcp-server declares", name)
		}
		t.MCPServers[i].Headers = append(t.MCPServers[i].Headers, HeaderRef{Header: header, Profile: value[1:]})
	}
	// The tools' own rules (checkTools) are the start's Check's, run once
	// per side of a gateway's socket, not here as well.
	return t, nil
}

// sameStartOptions reports whether a start asks for what the recorded
// job old was started with (an idempotency key answers only the same
// request): the parent, plan, visualization, tools and input names.
func sameStartOptions(old *Job, p *StartParams, parent *Job) bool {
	parentID := ""
	if parent != nil {
		parentID = parent.ID
	}
	o := old.Options
	if o == nil {
		o = &JobOptions{}
	}
	specs := p.Inputs.Specs()
	if old.ParentJob != parentID || o.Plan != p.Plan || o.Visualization != p.Visualization || len(o.Inputs) != len(specs) || o.MaxTokens != p.MaxTokens || o.KeepUploads != p.KeepUploads {
		return false
	}
	for i, in := range o.Inputs {
		if in.Name != filepath.Base(specs[i].Path) || in.Pages != specs[i].Pages || in.Sheet != specs[i].Sheet ||
			!slices.Equal(in.Layers, specs[i].Layers) || in.Resolution != specs[i].Resolution {
			return false
		}
	}
	a, _ := json.Marshal(o.Tools)
	b, _ := json.Marshal(p.Tools)
	return string(a) == string(b)
}
