// Package fakeapi is an in-repo fake of the Gemini Interactions API for
// tests: the real wire shape (steps[] or legacy outputs[], statuses,
// google.rpc.Status errors, Retry-After), scripted scenarios chosen by
// directives in the question text, and a log of every request so tests can
// prove "no HTTP before the owner check" and "exactly one create".
//
// A scenario is selected by a word "fake:NAME" anywhere in the create
// input; "fake-polls:N" sets how many polls a job takes to finish. Without a
// directive the interaction completes on its second poll.
//
// Create scenarios: create-429, create-503 (refused with Retry-After 7),
// create-429-once (refused the first time that exact input is seen),
// create-400, create-401, create-403, create-500 (after acceptance),
// create-503-proxy and create-503-json (accepted, then a 503 whose body is
// not Google's google.rpc.Status, as a proxy's),
// create-drop (the create is read and accepted, then the connection is
// closed without a response), create-hang (accepted, the response never
// comes).
// Poll scenarios: slow (6 polls), never (never finishes), poll-429-once,
// poll-503-once, poll-500-once, poll-drop-once, poll-403.
// Result scenarios: multibyte (multi-byte text with valid and invalid
// citations), partial (failed with partial text), incomplete,
// budget-exceeded, legacy (outputs[] instead of steps[]), cancel-ignored
// (a cancel is acknowledged but never takes effect), cancel-drop (never
// finishes by itself; a cancel is read and takes effect, then the
// connection is closed without an answer).
// Cancels otherwise take effect one poll after they are acknowledged: a
// bare 200 is not proof of cancellation.
package fakeapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIRevision is the revision header the fake requires.
const APIRevision = "2026-05-20"

// Entry is one logged request.
type Entry struct {
	Seq         int    `json:"seq"`
	Req         string `json:"req"` // "METHOD PATH"
	Method      string `json:"method"`
	Path        string `json:"path"`
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
}

type item struct {
	id        string
	input     string
	scenario  string
	polls     int
	finishAt  int
	cancelAt  int // poll count at which a cancel takes effect (0 = none)
	status    string
	created   time.Time
	updated   time.Time
	onceFired bool
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
		s.logFile.Close()
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

// Interactions returns how many interactions were accepted.
func (s *Server) Interactions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

func (s *Server) record(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Req = e.Method + " " + e.Path
	if !s.NoLog {
		e.Seq = len(s.log) + 1
		s.log = append(s.log, e)
	}
	if s.logFile != nil {
		line, _ := json.Marshal(e)
		s.logFile.Write(append(line, '\n'))
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
)

// ServeHTTP implements the three endpoints under any base path prefix that
// ends in /interactions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	i := strings.Index(path, "/interactions")
	if i < 0 {
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
		return
	}
	rest := path[i+len("/interactions"):]
	e := Entry{Method: r.Method, Path: path[i:], APIRevision: r.Header.Get("Api-Revision"), Account: account(r.Header.Get("x-goog-api-key")),
		AtMs: time.Now().UnixMilli(), From: r.RemoteAddr}
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.create(w, r, e)
	case strings.HasPrefix(rest, "/") && strings.HasSuffix(rest, "/cancel") && r.Method == http.MethodPost:
		s.cancel(w, r, e, strings.TrimSuffix(rest[1:], "/cancel"))
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodGet:
		s.get(w, e, rest[1:])
	default:
		e.Result = "404"
		s.record(e)
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
	}
}

func (s *Server) checkHeaders(w http.ResponseWriter, r *http.Request, e *Entry) bool {
	if r.Header.Get("x-goog-api-key") == "" {
		e.Result = "401"
		s.record(*e)
		writeStatus(w, http.StatusUnauthorized, "UNAUTHENTICATED", "API key missing")
		return false
	}
	if r.Header.Get("Api-Revision") != APIRevision {
		e.Result = "400"
		s.record(*e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "unsupported Api-Revision")
		return false
	}
	return true
}

type createReq struct {
	Agent       string         `json:"agent"`
	Input       string         `json:"input"`
	Background  bool           `json:"background"`
	Store       bool           `json:"store"`
	AgentConfig map[string]any `json:"agent_config"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, e Entry) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "unreadable body")
		return
	}
	e.Body = json.RawMessage(compact(body))
	if !s.checkHeaders(w, r, &e) {
		return
	}
	var cr createReq
	if json.Unmarshal(body, &cr) != nil || cr.Agent == "" || cr.Input == "" || !cr.Background || !cr.Store || cr.AgentConfig["type"] != "deep-research" {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "create needs agent, input, background:true, store:true and agent_config.type deep-research")
		return
	}
	scen := ""
	if m := directive.FindStringSubmatch(cr.Input); m != nil {
		scen = m[1]
	}
	e.Scenario = scen
	s.mu.Lock()
	s.seen[cr.Input]++
	firstTime := s.seen[cr.Input] == 1
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
	it := s.accept(cr.Input, scen)
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
		io.WriteString(w, "<html><body>503 Service Unavailable</body></html>\n")
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
	}
	e.Result = "200"
	s.record(e)
	s.mu.Lock()
	doc := render(it)
	s.mu.Unlock()
	writeJSON(w, 200, doc)
}

// Seed accepts an interaction without an HTTP request (benchmarks and
// tests that need many running interactions) and returns its id.
func (s *Server) Seed(input string) string {
	scen := ""
	if m := directive.FindStringSubmatch(input); m != nil {
		scen = m[1]
	}
	return s.accept(input, scen).id
}

func (s *Server) accept(input, scen string) *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	now := time.Now().UTC()
	it := &item{id: fmt.Sprintf("v1_fake%06d", s.next), input: input, scenario: scen, status: "in_progress", created: now, updated: now, finishAt: s.DefaultPolls}
	if scen == "slow" {
		it.finishAt = 6
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
	if !terminal(it.status) {
		switch {
		case it.cancelAt > 0 && it.polls >= it.cancelAt:
			it.status = "cancelled"
		case it.scenario == "never" || it.scenario == "cancel-ignored" || it.scenario == "cancel-drop":
		case it.polls >= it.finishAt:
			it.status = finalStatus(it.scenario)
		case it.polls == 1 && it.finishAt > 2:
			it.status = "queued"
		default:
			it.status = "in_progress"
		}
		it.updated = time.Now().UTC()
	}
	doc := render(it)
	s.mu.Unlock()
	e.Result = "200"
	s.record(e)
	writeJSON(w, 200, doc)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, e Entry, id string) {
	if !s.checkHeaders(w, r, &e) {
		return
	}
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
	case "partial":
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

func reportContent(scen string) []map[string]any {
	switch scen {
	case "multibyte":
		b0, b1 := MultibyteBlocks[0], MultibyteBlocks[1]
		tokyo := strings.Index(b0, "東京")
		rocket := strings.Index(b0, "🚀")
		cafe := strings.Index(b1, "café")
		return []map[string]any{
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
	case "partial", "incomplete", "budget-exceeded":
		return []map[string]any{textBlock("Partial findings so far.\n", ann("https://example.com/partial", "Partial", 0, 7))}
	}
	i := strings.Index(ReportText, "Rayleigh scattering")
	return []map[string]any{textBlock(ReportText, ann("https://en.wikipedia.org/wiki/Rayleigh_scattering", "Rayleigh scattering", i, i+len("Rayleigh scattering")))}
}

func render(it *item) map[string]any {
	doc := map[string]any{
		"id":      it.id,
		"object":  "interaction",
		"agent":   "deep-research-preview-04-2026",
		"status":  it.status,
		"created": it.created.Format(time.RFC3339Nano),
		"updated": it.updated.Format(time.RFC3339Nano),
	}
	input := map[string]any{"type": "user_input", "content": []any{map[string]any{"type": "text", "text": it.input}}}
	thought := map[string]any{"type": "thought", "signature": "sig", "summary": []any{map[string]any{"type": "text", "text": ThoughtMarker}}}
	search := map[string]any{"type": "google_search_call", "id": "call1", "arguments": map[string]any{"queries": []string{SearchMarker}}}
	result := map[string]any{"type": "google_search_result", "call_id": "call1", "result": []any{map[string]any{"url": "https://example.com", "title": SearchMarker}}}
	interim := map[string]any{"type": "model_output", "content": []any{textBlock(InterimMarker)}}
	steps := []any{input, thought, interim, search, result}
	partialText := it.scenario == "partial" || it.scenario == "incomplete" || it.scenario == "budget-exceeded"
	if it.status == "completed" || (terminal(it.status) && partialText) {
		content := reportContent(it.scenario)
		if it.scenario == "legacy" {
			outs := []any{map[string]any{"type": "thought", "summary": ThoughtMarker}}
			for _, c := range content {
				outs = append(outs, c)
			}
			doc["outputs"] = outs
		} else {
			steps = append(steps, thought, map[string]any{"type": "model_output", "content": content})
		}
		doc["usage"] = map[string]any{"total_input_tokens": 120, "total_output_tokens": 3400, "total_tokens": 3520}
	}
	if it.status == "failed" {
		doc["error"] = map[string]any{"code": 500, "message": "the research agent failed", "status": "INTERNAL"}
	}
	if it.scenario != "legacy" {
		doc["steps"] = steps
	}
	return doc
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
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
		tc.SetLinger(0)
	}
	conn.Close()
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
	URL string // base URL, e.g. http://127.0.0.1:PORT/v1beta
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
	go hs.Serve(ln)
	return &Listener{Server: s, URL: "http://" + ln.Addr().String() + "/v1beta", srv: hs, ln: ln}, nil
}

// Close stops the listener and the fake.
func (l *Listener) Close() {
	l.Server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
	l.srv.Close()
}
