// Package fakeapi is an in-repo fake of the Gemini Interactions API for
// tests. It serves Google's own clients (CI drives @google/genai against
// it, and every body it serves decodes into the Go SDK's Interaction):
// create/get/cancel under /{version}/interactions, the API key required on
// every call, no required Api-Revision header (recorded when sent),
// store and agent_config optional with the API's defaults, steps[],
// errors[], google.rpc.Status errors and Retry-After. Scripted scenarios
// are chosen by directives in the question text, and every request is
// logged so tests can prove "no HTTP before the owner check" and "exactly
// one create".
//
// A scenario is selected by a word "fake:NAME" anywhere in the create
// input; "fake-polls:N" sets how many polls a job takes to finish. Without a
// directive the interaction completes on its second poll. Each scenario is
// named after the behaviour of the real API it stands for; the list, with
// what each one serves, is in docs/research.md ("The fake Interactions
// API").
package fakeapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIRevision is the revision header Google's Go client sends; the fake
// records it but requires nothing (the npm client does not send it).
const APIRevision = "2026-05-20"

// Entry is one logged request.
type Entry struct {
	Seq         int    `json:"seq"`
	Req         string `json:"req"` // "METHOD PATH"
	Method      string `json:"method"`
	Path        string `json:"path"`
	APIVersion  string `json:"apiVersion"` // the path segment before /interactions
	APIRevision string `json:"apiRevision"`
	// Account is the first 16 hex digits of SHA-256 of the API key, the
	// same fingerprint clawkit shows; the key itself is never logged.
	Account  string          `json:"account"`
	Scenario string          `json:"scenario,omitempty"`
	Result   string          `json:"result"` // HTTP status or "dropped"/"hung"
	Body     json.RawMessage `json:"body,omitempty"`
	// AtMs is when the request arrived (Unix ms) and From its client's
	// address: partition tests tell the gateways apart by address.
	AtMs int64  `json:"atMs,omitempty"`
	From string `json:"from,omitempty"`
	// Previous is a create's previous_interaction_id; Turn what the fake
	// made of it (plan, confirm, follow-up, research).
	Previous string `json:"previous,omitempty"`
	Turn     string `json:"turn,omitempty"`
	// Stream is set for a GET with stream=true; LastEventID is the
	// event it resumed after.
	Stream      bool   `json:"stream,omitempty"`
	LastEventID string `json:"lastEventId,omitempty"`
	// Upload is an upload request's X-Goog-Upload-Command (files.go),
	// Offset and Bytes a chunk's, UploadName the file's display name or
	// name, SHA256 a finished file's digest.
	Upload     string `json:"upload,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	UploadName string `json:"uploadName,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	// FileState is the state a GET of a file answered.
	FileState string `json:"fileState,omitempty"`
}

// Server is the fake. The zero value is not usable; call New.
type Server struct {
	mu      sync.Mutex
	items   map[string]*item
	seen    map[string]int // create inputs seen (for *-once scenarios)
	next    int
	log     []Entry
	logFile *os.File
	// DefaultPolls is how many polls an interaction takes without a
	// fake-polls directive (default 2).
	DefaultPolls int
	// NoLog disables the in-memory log (benchmarks).
	NoLog   bool
	hang    chan struct{}
	closing sync.Once
	// uploads and files are the Files API's (files.go).
	uploads map[string]*upload
	files   map[string]*fakeFile
}

type item struct {
	id        string
	input     string
	scenario  string
	turn      string // "", "plan", "confirm", "follow-up"
	previous  string
	tools     []string // tool types declared
	parts     int      // document and image parts received
	visualize bool
	summaries bool // agent_config.thinking_summaries auto: the stream carries them
	polls     int
	finishAt  int
	cancelAt  int // poll count at which a cancel takes effect (0 = none)
	status    string
	created   time.Time
	updated   time.Time
	onceFired bool
	// key is the API key the create was sent with (echo-key quotes it).
	key string
	// events is the interaction's stream so far (stream.go); emitted the
	// poll count and status they reflect; streams how many streams were
	// opened (stream-drop-once drops the first).
	events      []map[string]any
	emitPolls   int
	emitStatus  string
	emitDone    bool
	streams     int
	resumed     bool          // a stream was opened with last_event_id
	finishAfter time.Duration // fake-ms: finishes this long after creation
}

// New returns a fake. If logPath is not empty every request is also
// appended to it as one JSON line (written before the response).
func New(logPath string) (*Server, error) {
	s := &Server{items: map[string]*item{}, seen: map[string]int{}, DefaultPolls: 2, hang: make(chan struct{})}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		s.logFile = f
	}
	return s, nil
}

// Close releases hung requests and the log file.
func (s *Server) Close() {
	s.closing.Do(func() { close(s.hang) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logFile != nil {
		_ = s.logFile.Close() // the fake's request log: a test reading it sees what arrived
		s.logFile = nil
	}
}

// Requests returns a copy of the log.
func (s *Server) Requests() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.log...)
}

// Count returns how many logged requests had this "METHOD PATH" (a path
// ending in "/*" matches any suffix).
func (s *Server) Count(req string) int {
	n := 0
	for _, e := range s.Requests() {
		if e.Req == req || (strings.HasSuffix(req, "*") && strings.HasPrefix(e.Req, strings.TrimSuffix(req, "*"))) {
			n++
		}
	}
	return n
}

// Status returns the current status of an interaction ("" if unknown).
func (s *Server) Status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.items[id]; it != nil {
		return it.status
	}
	return ""
}

// Finish ends interaction id now with its scenario's final status, as the
// provider finishes an interaction between two polls: a test of a stream
// follower sees it noticed without a poll having moved it on. It reports
// whether there was such a running interaction.
func (s *Server) Finish(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	if it == nil || terminal(it.status) {
		return false
	}
	it.status = finalStatus(it.scenario)
	it.updated = time.Now().UTC()
	return true
}

// Interactions returns how many interactions were accepted.
func (s *Server) Interactions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

func (s *Server) record(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(e)
}

func (s *Server) recordLocked(e Entry) {
	e.Req = e.Method + " " + e.Path
	if !s.NoLog {
		e.Seq = len(s.log) + 1
		s.log = append(s.log, e)
	}
	if s.logFile != nil {
		line, _ := json.Marshal(e)
		_, _ = s.logFile.Write(append(line, '\n')) // as in Close
	}
}

func account(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:16]
}

var (
	directive = regexp.MustCompile(`\bfake:([a-z0-9-]+)`)
	pollsDir  = regexp.MustCompile(`\bfake-polls:([0-9]+)`)
	msDir     = regexp.MustCompile(`\bfake-ms:([0-9]+)`)
)

// ServeHTTP implements the three endpoints under any base path prefix that
// ends in /interactions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveFiles(w, r) {
		return
	}
	path := r.URL.Path
	i := strings.Index(path, "/interactions")
	if i < 0 {
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
		return
	}
	rest := path[i+len("/interactions"):]
	e := Entry{Method: r.Method, Path: path[i:], APIVersion: strings.TrimPrefix(path[:i], "/"), APIRevision: r.Header.Get("Api-Revision"), Account: account(r.Header.Get("x-goog-api-key")),
		AtMs: time.Now().UnixMilli(), From: r.RemoteAddr}
	if !s.checkHeaders(w, r, &e) {
		return
	}
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.create(w, r, e)
	case strings.HasPrefix(rest, "/") && strings.HasSuffix(rest, "/cancel") && r.Method == http.MethodPost:
		s.cancel(w, r, e, strings.TrimSuffix(rest[1:], "/cancel"))
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodGet:
		if r.URL.Query().Get("stream") == "true" {
			s.stream(w, r, e, rest[1:])
			return
		}
		s.get(w, e, rest[1:])
	default:
		e.Result = "404"
		s.record(e)
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
	}
}

// checkHeaders requires the API key on every call, as the API does (a
// GET without a key is refused like a create).
func (s *Server) checkHeaders(w http.ResponseWriter, r *http.Request, e *Entry) bool {
	if r.Header.Get("x-goog-api-key") == "" {
		e.Result = "403"
		s.record(*e)
		writeStatus(w, http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return false
	}
	return true
}

// createReq is the part of a CreateAgentInteraction the fake reads.
// store and agent_config are optional, with the API's defaults (store
// true; the agent's own configuration).
type createReq struct {
	Agent       string           `json:"agent"`
	Input       json.RawMessage  `json:"input"`
	Background  bool             `json:"background"`
	Store       *bool            `json:"store"`
	AgentConfig map[string]any   `json:"agent_config"`
	Previous    string           `json:"previous_interaction_id"`
	Tools       []map[string]any `json:"tools"`
}

// MaxCreateBytes bounds a create body the fake reads (inline documents
// make it large).
const MaxCreateBytes = 32 << 20

// The MIME types of Google's SDK enums for document and image parts
// (genai v1.79.1's DocumentContentMimeType and ImageContentMimeType).
var (
	documentTypes = map[string]bool{"application/pdf": true, "text/csv": true,
		"application/vnd.openxmlformats-officedocument.presentationml.presentation": true, "application/vnd.ms-powerpoint": true,
		"application/vnd.oasis.opendocument.presentation": true, "application/vnd.openxmlformats-officedocument.wordprocessingml.document": true,
		"application/msword": true, "application/vnd.openxmlformats-officedocument.wordprocessingml.template": true,
		"application/vnd.oasis.opendocument.text": true, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": true,
		"application/vnd.ms-excel": true, "application/vnd.oasis.opendocument.spreadsheet": true}
	imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/heic": true, "image/heif": true, "image/gif": true, "image/bmp": true, "image/tiff": true}
)

// checkParts validates the document and image blocks of a content-list
// input: a type the SDK names, base64 data that decodes or the uri of a
// live uploaded file of that type, and a processing of the SDK's shape.
// It returns how many there were, or why the request is invalid.
func (s *Server) checkParts(raw json.RawMessage) (int, string) {
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) != nil {
		return 0, ""
	}
	n := 0
	for _, p := range parts {
		t, _ := p["type"].(string)
		mime, _ := p["mime_type"].(string)
		switch t {
		case "text":
		case "document", "image":
			ok := documentTypes[mime]
			if t == "image" {
				ok = imageTypes[mime]
			}
			if !ok {
				return 0, fmt.Sprintf("unsupported %s mime_type %q", t, mime)
			}
			data, hasData := p["data"].(string)
			uri, hasURI := p["uri"].(string)
			switch {
			case hasData == hasURI:
				return 0, t + " has both data and uri, or neither"
			case hasURI:
				f := s.fileByURI(uri)
				if f == nil {
					return 0, fmt.Sprintf("File %s not found or deleted", uri)
				}
				if f.MimeType != mime {
					return 0, fmt.Sprintf("%s is %s, not %s", uri, f.MimeType, mime)
				}
				if f.State != "ACTIVE" {
					return 0, fmt.Sprintf("File %s is not in an ACTIVE state and usage is not allowed.", uri)
				}
			default:
				if b, err := base64.StdEncoding.DecodeString(data); err != nil || len(b) == 0 {
					return 0, t + " data is not base64"
				}
			}
			if r, ok := p["resolution"]; ok && !slices.Contains([]any{"low", "medium", "high", "ultra_high"}, r) {
				// The SDK's MediaResolution.
				return 0, fmt.Sprintf("%s resolution %v is not low, medium, high or ultra_high", t, r)
			}
			if proc, ok := p["processing"]; ok {
				if msg := checkProcessing(t, proc); msg != "" {
					return 0, msg
				}
			}
			n++
		default:
			return 0, fmt.Sprintf("unsupported content type %q", t)
		}
	}
	return n, ""
}

// checkProcessing holds a document's processing to the SDK's
// DocumentStaticMediaProcessing: type static, page_options (start_page,
// end_page ≥ 1, end ≥ start) or spreadsheet_options (sheet_index ≥ 1,
// visible_cells).
// layersOf reports whether o's content_layers, when present, is a list
// of the given layers (the SDK's PageProcessingOptionsContentLayer and
// SpreadsheetProcessingOptionsContentLayer enums).
func layersOf(o map[string]any, allowed ...string) bool {
	v, present := o["content_layers"]
	if !present {
		return true
	}
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, l := range list {
		s, ok := l.(string)
		if !ok || !slices.Contains(allowed, s) {
			return false
		}
	}
	return true
}

func checkProcessing(t string, proc any) string {
	m, ok := proc.(map[string]any)
	if !ok || t != "document" || m["type"] != "static" {
		return "processing must be a document's {\"type\":\"static\",…}"
	}
	num := func(o map[string]any, k string) (float64, bool) {
		v, present := o[k]
		if !present {
			return 0, true
		}
		f, ok := v.(float64)
		return f, ok && f >= 1 && f == float64(int64(f))
	}
	for k, v := range m {
		switch k {
		case "type":
		case "page_options":
			o, ok := v.(map[string]any)
			if !ok {
				return "page_options is not an object"
			}
			a, okA := num(o, "start_page")
			b, okB := num(o, "end_page")
			if !okA || !okB || (a > 0 && b > 0 && b < a) {
				return "page_options: start_page and end_page are pages from 1, end_page >= start_page"
			}
			if !layersOf(o, "page_image", "page_text") {
				return "page_options.content_layers are page_image and page_text"
			}
		case "spreadsheet_options":
			o, ok := v.(map[string]any)
			if !ok {
				return "spreadsheet_options is not an object"
			}
			if _, ok := num(o, "sheet_index"); !ok {
				return "spreadsheet_options.sheet_index is a sheet from 1"
			}
			if !layersOf(o, "visual", "data", "formulas") {
				return "spreadsheet_options.content_layers are visual, data and formulas"
			}
			if c, present := o["visible_cells"]; present {
				if _, ok := c.(string); !ok {
					return "spreadsheet_options.visible_cells is A1 notation"
				}
			}
		default:
			return fmt.Sprintf("processing has unknown field %q", k)
		}
	}
	return ""
}

// loggedBody is a create body as the log keeps it: inline data replaced
// by its size and digest, a header's value by its fingerprint (a log
// never holds a secret).
func loggedBody(body []byte) json.RawMessage {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil {
		return json.RawMessage(compact(body))
	}
	if parts, ok := v["input"].([]any); ok {
		for _, p := range parts {
			if m, ok := p.(map[string]any); ok {
				if d, ok := m["data"].(string); ok {
					b, _ := base64.StdEncoding.DecodeString(d)
					sum := sha256.Sum256(b)
					m["data"] = fmt.Sprintf("%d bytes sha256:%s", len(b), hex.EncodeToString(sum[:]))
				}
			}
		}
	}
	if tools, ok := v["tools"].([]any); ok {
		for _, t := range tools {
			if m, ok := t.(map[string]any); ok {
				if hs, ok := m["headers"].(map[string]any); ok {
					for k, val := range hs {
						sv, _ := val.(string)
						hs[k] = "account:" + account(sv)
					}
				}
			}
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// inputText is the text of a create input: a string, or the text parts of
// a content or step list (the SDKs' InteractionsInput union).
func inputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		if len(p.Content) > 0 {
			b.WriteString(inputText(p.Content))
		}
	}
	return b.String()
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, e Entry) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxCreateBytes))
	if err != nil {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "unreadable body")
		return
	}
	e.Body = loggedBody(body)
	var cr createReq
	bad := ""
	nparts, badParts := 0, ""
	if json.Unmarshal(body, &cr) == nil {
		nparts, badParts = s.checkParts(cr.Input)
	}
	e.Previous = cr.Previous
	switch {
	case badParts != "":
		bad = badParts
	case json.Unmarshal(body, &cr) != nil:
		bad = "the request body is not a CreateInteraction"
	case cr.Agent == "":
		bad = "agent is required"
	case inputText(cr.Input) == "":
		bad = "input is required"
	case !cr.Background:
		bad = "agent interactions must run in the background (background: true)"
	case cr.Store != nil && !*cr.Store:
		bad = "background interactions must be stored (store: true)"
	case cr.AgentConfig != nil && cr.AgentConfig["type"] != "deep-research":
		bad = "agent_config.type must be deep-research for a deep research agent"
	}
	if bad != "" {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", bad)
		return
	}
	input := inputText(cr.Input)
	scen := ""
	if m := directive.FindStringSubmatch(input); m != nil {
		scen = m[1]
	}
	// A turn that follows another must name one this API knows, and
	// finished: a confirming turn follows its plan, a follow-up its
	// report.
	turn := ""
	if planning, _ := cr.AgentConfig["collaborative_planning"].(bool); planning {
		turn = "plan"
	}
	if cr.Previous != "" {
		s.mu.Lock()
		prev := s.items[cr.Previous]
		prevStatus, prevTurn, prevScen := "", "", ""
		if prev != nil {
			prevStatus, prevTurn, prevScen = prev.status, prev.turn, prev.scenario
		}
		s.mu.Unlock()
		switch {
		case prev == nil:
			e.Result = "404"
			s.record(e)
			writeStatus(w, 404, "NOT_FOUND", "previous interaction "+cr.Previous+" not found")
			return
		case !terminal(prevStatus):
			e.Result = "400"
			s.record(e)
			writeStatus(w, 400, "FAILED_PRECONDITION", "previous interaction "+cr.Previous+" has not finished")
			return
		case prevTurn == "plan" && turn == "":
			turn = "confirm"
		case turn == "":
			turn = "follow-up"
		}
		if scen == "" {
			// The chain keeps its scenario (a confirming turn's create
			// that hangs, say, is chosen by the question).
			scen = prevScen
		}
	}
	e.Scenario, e.Turn = scen, turn
	if turn == "confirm" && strings.HasPrefix(scen, "create-") && !strings.HasPrefix(scen, "confirm-") {
		// A create-* scenario chosen by the question applies to the plan
		// turn's create; confirm-* ones to the confirming turn's.
		scen = ""
	}
	if turn == "confirm" && strings.HasPrefix(scen, "confirm-") {
		scen = strings.TrimPrefix(scen, "confirm-")
	}
	s.mu.Lock()
	s.seen[input]++
	firstTime := s.seen[input] == 1
	s.mu.Unlock()
	switch scen {
	case "create-429", "create-503":
		code := 429
		if scen == "create-503" {
			code = 503
		}
		e.Result = strconv.Itoa(code)
		s.record(e)
		w.Header().Set("Retry-After", "7")
		writeStatus(w, code, map[int]string{429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[code], "try again later")
		return
	case "create-429-once":
		if firstTime {
			e.Result = "429"
			s.record(e)
			w.Header().Set("Retry-After", "2")
			writeStatus(w, 429, "RESOURCE_EXHAUSTED", "quota exceeded, try again later")
			return
		}
	case "create-400":
		e.Result = "400"
		s.record(e)
		writeStatus(w, 400, "INVALID_ARGUMENT", "the request is invalid")
		return
	case "create-400-echo-key":
		// An error that quotes the key it was sent, as some API gateways
		// and proxies in front of an API do.
		e.Result = "400"
		s.record(e)
		writeStatus(w, 400, "INVALID_ARGUMENT", "API key not valid: "+r.Header.Get("x-goog-api-key")+". Please pass a valid API key.")
		return
	case "create-400-forge":
		e.Result = "400"
		s.record(e)
		writeStatus(w, 400, "INVALID_ARGUMENT", ForgedText)
		return
	case "create-401", "create-403":
		code := 401
		if scen == "create-403" {
			code = 403
		}
		e.Result = strconv.Itoa(code)
		s.record(e)
		writeStatus(w, code, "PERMISSION_DENIED", "the API key is not valid")
		return
	}
	it := s.accept(input, scen)
	s.mu.Lock()
	it.turn, it.previous, it.parts = turn, cr.Previous, nparts
	for _, t := range cr.Tools {
		if ty, ok := t["type"].(string); ok {
			it.tools = append(it.tools, ty)
		}
	}
	if v, _ := cr.AgentConfig["thinking_summaries"].(string); v == "auto" {
		it.summaries = true
	}
	if v, _ := cr.AgentConfig["visualization"].(string); v == "auto" {
		it.visualize = true
	}
	it.key = r.Header.Get("x-goog-api-key")
	s.mu.Unlock()
	switch scen {
	case "create-500":
		e.Result = "500"
		s.record(e)
		writeStatus(w, 500, "INTERNAL", "internal error")
		return
	case "create-503-proxy":
		// A proxy in front of the API forwarded the create, then answered
		// 503 itself: not Google's google.rpc.Status, so nothing is proved.
		e.Result = "503"
		s.record(e)
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(503)
		_, _ = io.WriteString(w, "<html><body>503 Service Unavailable</body></html>\n")
		return
	case "create-503-json":
		// A JSON 503 shaped like an error but not a google.rpc.Status.
		e.Result = "503"
		s.record(e)
		writeJSON(w, 503, map[string]any{"error": map[string]any{"message": "upstream unavailable"}})
		return
	case "create-drop":
		e.Result = "dropped"
		s.record(e)
		drop(w)
		return
	case "create-hang":
		e.Result = "hung"
		s.record(e)
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	case "create-slow":
		// A provider that takes a while to accept a create: the arrival is
		// logged ("arrived"), the answer comes 2 s later whether or not
		// the client is still there, as a real server's would.
		arrived := e
		arrived.Result = "arrived"
		s.record(arrived)
		time.Sleep(2 * time.Second)
	case "create-not-json":
		// Accepted, then an answer that is not JSON (a proxy's error page
		// with status 200): no id, so no receipt.
		e.Result = "200"
		s.record(e)
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>OK</body></html>\n")
		return
	}
	e.Result = "200"
	s.record(e)
	s.mu.Lock()
	doc := render(it)
	s.mu.Unlock()
	if scen == "create-malformed-steps" {
		// The id and status are fine, the rest is not: still a receipt.
		doc["steps"] = "not a list"
	}
	writeJSON(w, 200, doc)
}

// Seed accepts an interaction without an HTTP request (benchmarks and
// tests that need many running interactions) and returns its id.
func (s *Server) Seed(input string) string {
	scen := ""
	if m := directive.FindStringSubmatch(input); m != nil {
		scen = m[1]
	}
	it := s.accept(input, scen)
	s.mu.Lock()
	it.summaries = true // as clawkit creates them (thinking_summaries auto)
	s.mu.Unlock()
	return it.id
}

func (s *Server) accept(input, scen string) *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	now := time.Now().UTC()
	it := &item{id: fmt.Sprintf("v1_fake%06d", s.next), input: input, scenario: scen, status: "in_progress", created: now, updated: now, finishAt: s.DefaultPolls}
	switch scen {
	case "slow":
		it.finishAt = 6
	case "continuation-on-create":
		it.status, it.finishAt = "requires_continuation", 3
	case "continuation-on-poll", "unknown-status":
		it.finishAt = 3
	}
	if m := msDir.FindStringSubmatch(input); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			it.finishAfter = time.Duration(n) * time.Millisecond
		}
	}
	if m := pollsDir.FindStringSubmatch(input); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			it.finishAt = n
		}
	}
	s.items[it.id] = it
	return it
}

func (s *Server) get(w http.ResponseWriter, e Entry, id string) {
	if strings.Contains(id, "/") {
		e.Result = "404"
		s.record(e)
		writeStatus(w, 404, "NOT_FOUND", "no such endpoint")
		return
	}
	s.mu.Lock()
	it := s.items[id]
	s.mu.Unlock()
	if it == nil {
		e.Result = "404"
		s.record(e)
		writeStatus(w, 404, "NOT_FOUND", "interaction not found")
		return
	}
	e.Scenario = it.scenario
	s.mu.Lock()
	fireOnce := !it.onceFired && strings.HasPrefix(it.scenario, "poll-") && strings.HasSuffix(it.scenario, "-once")
	if fireOnce {
		it.onceFired = true
	}
	s.mu.Unlock()
	if fireOnce {
		switch it.scenario {
		case "poll-429-once", "poll-503-once":
			code := 429
			if it.scenario == "poll-503-once" {
				code = 503
			}
			e.Result = strconv.Itoa(code)
			s.record(e)
			w.Header().Set("Retry-After", "1")
			writeStatus(w, code, "UNAVAILABLE", "slow down")
			return
		case "poll-500-once":
			e.Result = "500"
			s.record(e)
			writeStatus(w, 500, "INTERNAL", "internal error")
			return
		case "poll-drop-once":
			e.Result = "dropped"
			s.record(e)
			drop(w)
			return
		}
	}
	if it.scenario == "poll-403" {
		e.Result = "403"
		s.record(e)
		writeStatus(w, 403, "PERMISSION_DENIED", "caller does not have permission")
		return
	}
	s.mu.Lock()
	it.polls++
	advance(it)
	doc := render(it)
	first := it.polls == 1
	s.mu.Unlock()
	s.answerGet(w, e, it, doc, first)
}

// advance moves an interaction on after a poll: by its poll count, or,
// with fake-ms, by the time since its creation.
func advance(it *item) {
	if it.scenario == "stream-drop-once" && !it.resumed && !terminal(it.status) && it.cancelAt == 0 {
		// Runs until a dropped stream was resumed (stream.go).
		it.status = "in_progress"
		return
	}
	if it.finishAfter > 0 && !terminal(it.status) {
		switch {
		case it.cancelAt != 0 && it.cancelAt <= it.polls:
			it.status = "cancelled"
		case time.Since(it.created) >= it.finishAfter:
			it.status = finalStatus(it.scenario)
		default:
			it.status = "in_progress"
		}
		it.updated = time.Now().UTC()
		return
	}
	if !terminal(it.status) {
		switch {
		case it.cancelAt > 0 && it.polls >= it.cancelAt:
			it.status = "cancelled"
		case it.scenario == "never" || it.scenario == "cancel-ignored" || it.scenario == "cancel-drop":
		case it.polls >= it.finishAt:
			it.status = finalStatus(it.scenario)
		case it.scenario == "continuation-on-create" || it.scenario == "continuation-on-poll":
			it.status = "requires_continuation"
		case it.scenario == "unknown-status":
			it.status = UnknownStatus
		case it.scenario == "forge-text":
			it.status = ForgedStatus
		case it.polls == 1 && it.finishAt > 2:
			it.status = "queued"
		default:
			it.status = "in_progress"
		}
		it.updated = time.Now().UTC()
	}
}

func (s *Server) answerGet(w http.ResponseWriter, e Entry, it *item, doc map[string]any, first bool) {
	e.Result = "200"
	switch {
	case first && it.scenario == "poll-not-json-once":
		s.record(e)
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>Service temporarily unavailable</body></html>\n")
		return
	case first && it.scenario == "poll-truncated-once":
		b, _ := json.Marshal(doc)
		s.record(e)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b[:len(b)/2]) // a write error: the client went away
		return
	case it.scenario == "oversized" && terminal(it.status):
		e.Result = "200-oversized"
		s.record(e)
		writeOversized(w, doc)
		return
	}
	s.record(e)
	writeJSON(w, 200, doc)
}

// UnknownStatus is a status no SDK defines, served by the unknown-status
// scenario while the interaction runs.
const UnknownStatus = "paused_for_review"

// OversizedBytes is the size of the oversized scenario's final answer:
// more than clawkit reads (32 MiB).
const OversizedBytes = 33 << 20

func writeOversized(w http.ResponseWriter, doc map[string]any) {
	doc["steps"] = []any{map[string]any{"type": "model_output", "content": []any{textBlock(strings.Repeat("x", OversizedBytes))}}}
	writeJSON(w, 200, doc)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, e Entry, id string) {
	s.mu.Lock()
	it := s.items[id]
	if it == nil {
		s.mu.Unlock()
		e.Result = "404"
		s.record(e)
		writeStatus(w, 404, "NOT_FOUND", "interaction not found")
		return
	}
	e.Scenario = it.scenario
	if !terminal(it.status) && it.cancelAt == 0 {
		if it.scenario == "cancel-ignored" {
			it.cancelAt = -1
		} else {
			// Takes effect on the second poll after the acknowledgement.
			it.cancelAt = it.polls + 2
		}
	}
	doc := render(it)
	s.mu.Unlock()
	if it.scenario == "cancel-drop" {
		// The cancel is read and takes effect, but the answer never comes.
		e.Result = "dropped"
		s.record(e)
		drop(w)
		return
	}
	e.Result = "200"
	s.record(e)
	writeJSON(w, 200, doc)
}

func finalStatus(scen string) string {
	switch scen {
	case "partial", "step-error", "echo-key", "forge-text":
		return "failed"
	case "incomplete":
		return "incomplete"
	case "budget-exceeded":
		return "budget_exceeded"
	}
	return "completed"
}

func terminal(s string) bool {
	switch s {
	case "completed", "failed", "cancelled", "incomplete", "budget_exceeded":
		return true
	}
	return false
}

// Report texts the fake returns; tests compare published reports to them.
const (
	ReportText = "# Findings\n\nThe sky is blue because of Rayleigh scattering.\n"
	// Thought, search and interim markers must never reach a report.
	ThoughtMarker = "SECRET-THOUGHT-SUMMARY"
	SearchMarker  = "SEARCH-CALL-QUERY"
	InterimMarker = "INTERIM-ANSWER"
)

// MultibyteBlocks are the two text blocks of the multibyte scenario.
var MultibyteBlocks = []string{
	"Über die Ökonomie: 東京 wächst 🚀 schnell.",
	"Zweiter Block — naïve café ✓.",
}

func ann(url, title string, s, e int) map[string]any {
	return map[string]any{"type": "url_citation", "url": url, "title": title, "start_index": s, "end_index": e}
}

func textBlock(text string, anns ...map[string]any) map[string]any {
	b := map[string]any{"type": "text", "text": text}
	if len(anns) > 0 {
		b["annotations"] = anns
	}
	return b
}

func reportContent(scen string) []any {
	switch scen {
	case "bad-citation-index":
		i := strings.Index(ReportText, "Rayleigh scattering")
		good := ann("https://en.wikipedia.org/wiki/Rayleigh_scattering", "Rayleigh scattering", i, i+len("Rayleigh scattering"))
		frac := map[string]any{"type": "url_citation", "url": "https://example.com/fraction", "title": "bad: 1.5", "start_index": 1.5, "end_index": 4}
		str := map[string]any{"type": "url_citation", "url": "https://example.com/string", "title": "bad: \"1\"", "start_index": "1", "end_index": 4}
		huge := map[string]any{"type": "url_citation", "url": "https://example.com/huge", "title": "bad: 2^63", "start_index": json.Number("9223372036854775808"), "end_index": json.Number("9223372036854775809")}
		return []any{textBlock(ReportText, good, frac, str, huge)}
	case "multibyte":
		b0, b1 := MultibyteBlocks[0], MultibyteBlocks[1]
		tokyo := strings.Index(b0, "東京")
		rocket := strings.Index(b0, "🚀")
		cafe := strings.Index(b1, "café")
		return []any{
			textBlock(b0,
				ann("https://example.com/tokyo", "Tokyo", tokyo, tokyo+len("東京")),
				ann("https://example.com/rocket", "Rocket", rocket, rocket+len("🚀")),
				ann("https://example.com/mid-rune", "bad: mid rune", tokyo+1, tokyo+3),
				ann("https://example.com/out", "bad: out of range", 0, len(b0)+5),
				ann("javascript:alert(1)", "bad: scheme", 0, 3),
			),
			textBlock(b1,
				ann("https://example.com/cafe", "Café", cafe, cafe+len("café")),
				ann("https://example.com/reversed", "bad: reversed", 5, 2),
			),
		}
	case "partial", "incomplete", "budget-exceeded", "step-error", "echo-key", "forge-text":
		return []any{textBlock("Partial findings so far.\n", ann("https://example.com/partial", "Partial", 0, 7))}
	}
	i := strings.Index(ReportText, "Rayleigh scattering")
	return []any{textBlock(ReportText, ann("https://en.wikipedia.org/wiki/Rayleigh_scattering", "Rayleigh scattering", i, i+len("Rayleigh scattering")))}
}

// ProviderErrorCode and ProviderErrorMessage are the errors[] entry of a
// failed interaction (the SDKs' Error: code is a URI).
const (
	ProviderErrorCode    = "https://ai.google.dev/errors/research-agent-internal"
	ProviderErrorMessage = "The research agent could not finish: an internal error occurred."
	StepErrorMessage     = "The model output was cut off by an internal error."
)

// Forged texts of the forge-text and create-400-forge scenarios: provider
// text that tries to forge a clawkit error line and to drive the terminal
// (clear the screen, colour, a hyperlink). Human output must show them
// escaped.
const (
	ForgedText   = "ok\nclawkit: error: forged by the provider\x1b[2J\x1b[31mred"
	ForgedCode   = "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07"
	ForgedStatus = "paused\r\nclawkit: error: forged status\x1b[1A"
)

// SplitParts are the two model outputs of the split-output scenario,
// which the SDKs' output_text joins across a thought step.
var SplitParts = []string{"## Part one\n\nSolar output rose 12%.\n", "## Part two\n\nWind output fell 3%.\n"}

func render(it *item) map[string]any {
	doc := map[string]any{
		"id":      it.id,
		"object":  "interaction",
		"agent":   "deep-research-preview-04-2026",
		"status":  it.status,
		"created": it.created.Format(time.RFC3339Nano),
		"updated": it.updated.Format(time.RFC3339Nano),
	}
	if it.status == "requires_continuation" {
		doc["continuation_token"] = "ct_" + it.id
	}
	input := map[string]any{"type": "user_input", "content": []any{map[string]any{"type": "text", "text": it.input}}}
	thought := map[string]any{"type": "thought", "signature": "sig", "summary": []any{map[string]any{"type": "text", "text": ThoughtMarker}}}
	search := map[string]any{"type": "google_search_call", "id": "call1", "arguments": map[string]any{"queries": []string{SearchMarker}}}
	result := map[string]any{"type": "google_search_result", "call_id": "call1", "result": []any{map[string]any{"url": "https://example.com", "title": SearchMarker}}}
	interim := map[string]any{"type": "model_output", "content": []any{textBlock(InterimMarker)}}
	steps := []any{input, thought, interim, search, result}
	if it.turn == "plan" {
		// A plan turn: the agent thinks, then answers with its plan.
		steps = []any{input, thought}
		if it.status == "completed" {
			steps = append(steps, map[string]any{"type": "model_output", "content": []any{textBlock(PlanText)}})
			doc["usage"] = PlanUsage
		}
		doc["steps"] = steps
		return doc
	}
	if it.scenario == "usage-running" && !terminal(it.status) && it.polls > 0 {
		doc["usage"] = RunningUsage(it.polls)
	}
	steps = append(steps, toolSteps(it.tools)...)
	partialText := it.scenario == "partial" || it.scenario == "incomplete" || it.scenario == "budget-exceeded" || it.scenario == "step-error" || it.scenario == "echo-key" || it.scenario == "forge-text"
	if it.status == "completed" || (terminal(it.status) && partialText) {
		content := reportContent(it.scenario)
		switch {
		case it.turn == "follow-up":
			content = []any{textBlock(FollowUpText(it.previous))}
		case it.parts > 0:
			content = []any{textBlock(PartsText(it.parts))}
		}
		if it.visualize {
			// A chart in its own output before the report, and one after
			// the report's text in the final output: output_text is still
			// only the text.
			steps = append(steps, map[string]any{"type": "model_output", "content": []any{imageBlock(FigurePNGs()[0])}})
			content = append(content, imageBlock(FigurePNGs()[1]))
		}
		final := map[string]any{"type": "model_output", "content": content}
		switch it.scenario {
		case "split-output":
			a, b := SplitParts[0], SplitParts[1]
			steps = append(steps, thought,
				map[string]any{"type": "model_output", "content": []any{textBlock(a, ann("https://example.com/solar", "Solar", strings.Index(a, "Solar"), strings.Index(a, "Solar")+len("Solar output rose 12%")))}},
				thought,
				map[string]any{"type": "model_output", "content": []any{textBlock(b, ann("https://example.com/wind", "Wind", strings.Index(b, "Wind"), strings.Index(b, "Wind")+len("Wind output fell 3%")))}})
		case "step-error":
			final["error"] = map[string]any{"code": 13, "message": StepErrorMessage}
			steps = append(steps, thought, final)
		default:
			steps = append(steps, thought, final)
		}
		doc["usage"] = FinalUsage
		if it.scenario == "usage-running" {
			doc["usage"] = RunningUsage(it.polls)
		}
	}
	switch {
	case it.status == "failed" && it.scenario == "echo-key":
		doc["errors"] = []any{map[string]any{"code": ProviderErrorCode, "message": "quota of key " + it.key + " exhausted"}}
	case it.status == "failed" && it.scenario == "forge-text":
		doc["errors"] = []any{map[string]any{"code": ForgedCode, "message": ForgedText}}
	case it.status == "failed" && it.scenario != "step-error":
		doc["errors"] = []any{map[string]any{"code": ProviderErrorCode, "message": ProviderErrorMessage}}
	}
	switch {
	case it.scenario == "legacy-outputs" && terminal(it.status):
		// The shape of the API before steps[]: the SDKs no longer map
		// outputs[] for agents, so there is no output text.
		doc["outputs"] = reportContent("")
	case it.scenario == "steps-missing" && terminal(it.status):
	case it.scenario == "steps-empty" && terminal(it.status):
		doc["steps"] = []any{}
	default:
		doc["steps"] = steps
	}
	return doc
}

// Usage the fake reports (the SDKs' Usage): a plan turn's, a finished
// interaction's, and, in the usage-running scenario, a running one's from
// its first poll on, growing with each poll (the last poll's is kept at
// the end). Without that scenario a running interaction reports no usage.
var (
	PlanUsage  = map[string]any{"total_input_tokens": 120, "total_output_tokens": 300, "total_tokens": 420}
	FinalUsage = map[string]any{"total_input_tokens": 120, "total_output_tokens": 3400, "total_tokens": 3520}
)

// RunningUsage is the usage-running scenario's usage after polls polls:
// 120 input tokens, 1,000 thought and 200 tool-use tokens and one Google
// Search call per poll.
func RunningUsage(polls int) map[string]any {
	return map[string]any{"total_input_tokens": 120, "total_thought_tokens": 1000 * polls, "total_tool_use_tokens": 200 * polls,
		"total_cached_tokens": 0, "total_tokens": 120 + 1200*polls,
		"grounding_tool_count": []any{map[string]any{"type": "google_search", "count": polls}}}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a write error: the client went away
}

func writeStatus(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

// drop closes the connection without writing a response.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset is the point; a plain close is the fallback
	}
	_ = conn.Close() // a dropped connection is the point
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		q, _ := json.Marshal(string(b))
		return q
	}
	return out.Bytes()
}

// Listener is a running fake on a loopback port.
type Listener struct {
	*Server
	URL string // server URL without an API version, e.g. http://127.0.0.1:PORT
	srv *http.Server
	ln  net.Listener
}

// Start serves a new fake on 127.0.0.1:0.
func Start(logPath string) (*Listener, error) { return StartOn("127.0.0.1:0", logPath) }

// StartOn is Start on a given address (a partition test's namespace).
func StartOn(addr, logPath string) (*Listener, error) {
	s, err := New(logPath)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return nil, err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ErrServerClosed after Close
	return &Listener{Server: s, URL: "http://" + ln.Addr().String(), srv: hs, ln: ln}, nil
}

// Close stops the listener and the fake.
func (l *Listener) Close() {
	l.Server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if l.srv.Shutdown(ctx) != nil {
		_ = l.srv.Close() // the drain timed out: drop what is left
	}
}

// PlanText is the plan a plan turn proposes.
const PlanText = "## Research plan\n\n1. Survey the literature on the question.\n2. Compare the main sources.\n3. Write the report with citations.\n"

// FollowUpText is a follow-up's report: it names the interaction it
// followed, so a test sees the previous_interaction_id arrived.
func FollowUpText(previous string) string {
	return "# Follow-up\n\nAnswered in the context of interaction " + previous + ".\n"
}

// PartsText is the report of a turn that carried inline documents or
// images.
func PartsText(n int) string {
	return "# Findings\n\nRead " + strconv.Itoa(n) + " attached file(s).\n"
}

// ToolMarker is text of tool calls and results: it must never reach a
// report.
const ToolMarker = "TOOL-RESULT-MARKER"

// toolSteps are the calls and results of the tools a create declared.
func toolSteps(tools []string) []any {
	var out []any
	for i, t := range tools {
		id := "tool" + strconv.Itoa(i+1)
		switch t {
		case "file_search":
			out = append(out, map[string]any{"type": "file_search_call", "id": id},
				map[string]any{"type": "file_search_result", "call_id": id})
		case "url_context":
			out = append(out, map[string]any{"type": "url_context_call", "id": id, "arguments": map[string]any{"urls": []string{"https://example.com/" + ToolMarker}}},
				map[string]any{"type": "url_context_result", "call_id": id, "result": []any{map[string]any{"url": "https://example.com/" + ToolMarker, "status": "success"}}})
		case "mcp_server":
			out = append(out, map[string]any{"type": "mcp_server_tool_call", "id": id, "name": "lookup", "server_name": "mcp", "arguments": map[string]any{"q": ToolMarker}},
				map[string]any{"type": "mcp_server_tool_result", "call_id": id, "name": "lookup", "server_name": "mcp", "result": ToolMarker})
		}
	}
	return out
}

func imageBlock(png []byte) map[string]any {
	return map[string]any{"type": "image", "mime_type": "image/png", "data": base64.StdEncoding.EncodeToString(png)}
}

// FigurePNGs are the two charts of a visualization: real PNG files (1×1
// pixels, red and blue), in timeline order.
func FigurePNGs() [][]byte { return [][]byte{onePixelPNG(0xff, 0, 0), onePixelPNG(0, 0, 0xff)} }

func onePixelPNG(r, g, b byte) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: r, G: g, B: b, A: 0xff})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // a valid 1×1 image into memory: cannot fail
	return buf.Bytes()
}
