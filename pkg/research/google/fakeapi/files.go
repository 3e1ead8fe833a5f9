package fakeapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Files API as the SDKs upload to it (docs/research.md, "The fake
// Interactions API"): POST /upload/{version}/files with
// X-Goog-Upload-Protocol resumable and X-Goog-Upload-Command start opens a
// session whose URL comes back in X-Goog-Upload-Url; chunks are POSTed to
// it with X-Goog-Upload-Command upload (the last "upload, finalize") at
// their X-Goog-Upload-Offset, which must be the bytes received so far;
// "query" answers X-Goog-Upload-Size-Received. GET and DELETE
// /{version}/files/{id} read and delete a file. A create's document may
// name an uploaded file by uri; a deleted or unknown one is refused.
//
// A file whose display name holds "fake-upload-hang" has its second chunk
// held open (never answered) once: a client killed there resumes with a
// query. One whose name holds "fake-chunk-fail-once" has its second
// chunk taken and then answered 503 UNAVAILABLE, once: the client must
// ask the session (query) where it stands before sending more. One whose
// name holds "fake-processing" is final in state PROCESSING and becomes
// ACTIVE at the second GET of it ("fake-processing-failed": FAILED), as
// the Files API processes some files before they can be used; a create
// naming a file that is not ACTIVE is refused 400.

// MaxUploadFileBytes bounds what the fake keeps of one upload (it keeps
// the digest, not the bytes).
const MaxUploadFileBytes = 2 << 30

type upload struct {
	id          string
	displayName string
	mime        string
	declared    int64
	received    int64
	hasher      interface {
		io.Writer
		Sum([]byte) []byte
	}
	file   *fakeFile
	hung   bool
	failed bool // fake-chunk-fail-once: the failure was served
}

type fakeFile struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	MimeType    string `json:"mimeType"`
	SizeBytes   string `json:"sizeBytes"`
	CreateTime  string `json:"createTime"`
	UpdateTime  string `json:"updateTime"`
	SHA256Hash  string `json:"sha256Hash"`
	URI         string `json:"uri"`
	State       string `json:"state"`
	Source      string `json:"source"`
	deleted     bool
	// gets counts the GETs of a file still PROCESSING; at the second it
	// becomes final (then).
	gets int
	then string
}

// serveFiles answers the upload and file endpoints; false when path is
// none of them.
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	var version, rest string
	switch {
	case strings.HasPrefix(path, "/upload/"):
		v, tail, _ := strings.Cut(strings.TrimPrefix(path, "/upload/"), "/")
		if strings.TrimSuffix(tail, "/") != "files" {
			return false
		}
		version = v
	default:
		i := strings.Index(path, "/files")
		if i < 0 || strings.Contains(path, "/interactions") {
			return false
		}
		version, rest = strings.Trim(path[:i], "/"), strings.TrimPrefix(path[i:], "/files")
		if rest == "" || !strings.HasPrefix(rest, "/") {
			return false
		}
	}
	e := Entry{Method: r.Method, Path: path, APIVersion: version, Account: account(r.Header.Get("x-goog-api-key")), AtMs: time.Now().UnixMilli(), From: r.RemoteAddr}
	if !s.checkHeaders(w, r, &e) {
		return true
	}
	if rest != "" {
		s.file(w, r, e, version, rest[1:])
		return true
	}
	if id := r.URL.Query().Get("upload_id"); id != "" {
		s.chunk(w, r, e, id)
		return true
	}
	s.startUpload(w, r, e, version)
	return true
}

func (s *Server) startUpload(w http.ResponseWriter, r *http.Request, e Entry, version string) {
	e.Upload = "start"
	if r.Method != http.MethodPost || r.Header.Get("X-Goog-Upload-Protocol") != "resumable" || r.Header.Get("X-Goog-Upload-Command") != "start" {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "an upload starts with X-Goog-Upload-Protocol: resumable and X-Goog-Upload-Command: start")
		return
	}
	var body struct {
		File struct {
			DisplayName string `json:"displayName"`
			MimeType    string `json:"mimeType"`
		} `json:"file"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(raw) > 0 {
		if json.Unmarshal(raw, &body) != nil {
			e.Result = "400"
			s.record(e)
			writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the upload's metadata is not JSON")
			return
		}
	}
	mime := r.Header.Get("X-Goog-Upload-Header-Content-Type")
	if mime == "" {
		mime = body.File.MimeType
	}
	declared := int64(-1)
	if v := r.Header.Get("X-Goog-Upload-Header-Content-Length"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > MaxUploadFileBytes {
			e.Result = "400"
			s.record(e)
			writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "X-Goog-Upload-Header-Content-Length is not a size the Files API takes")
			return
		}
		declared = n
	}
	name := body.File.DisplayName
	if name == "" {
		name = r.Header.Get("X-Goog-Upload-File-Name")
	}
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("up%04d", s.next)
	if s.uploads == nil {
		s.uploads, s.files = map[string]*upload{}, map[string]*fakeFile{}
	}
	s.uploads[id] = &upload{id: id, displayName: name, mime: mime, declared: declared, hasher: sha256.New()}
	s.mu.Unlock()
	e.Result = "200"
	e.UploadName = name
	s.record(e)
	w.Header().Set("X-Goog-Upload-Url", "http://"+r.Host+"/upload/"+version+"/files?upload_id="+id+"&upload_protocol=resumable")
	w.Header().Set("X-Goog-Upload-Status", "active")
	w.Header().Set("X-Goog-Upload-Chunk-Granularity", "262144")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) chunk(w http.ResponseWriter, r *http.Request, e Entry, id string) {
	cmd := r.Header.Get("X-Goog-Upload-Command")
	e.Upload = cmd
	s.mu.Lock()
	u := s.uploads[id]
	s.mu.Unlock()
	if u == nil || r.Method != http.MethodPost {
		e.Result = "404"
		s.record(e)
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such upload session")
		return
	}
	if cmd == "query" {
		s.mu.Lock()
		received, final := u.received, u.file
		s.mu.Unlock()
		e.Result, e.Offset = "200", received
		s.record(e)
		if final != nil {
			w.Header().Set("X-Goog-Upload-Status", "final")
			writeJSON(w, http.StatusOK, map[string]any{"file": final})
			return
		}
		w.Header().Set("X-Goog-Upload-Status", "active")
		w.Header().Set("X-Goog-Upload-Size-Received", strconv.FormatInt(received, 10))
		w.WriteHeader(http.StatusOK)
		return
	}
	if cmd != "upload" && cmd != "upload, finalize" {
		e.Result = "400"
		s.record(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "X-Goog-Upload-Command must be upload, upload, finalize or query")
		return
	}
	off, err := strconv.ParseInt(r.Header.Get("X-Goog-Upload-Offset"), 10, 64)
	data, rerr := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	e.Offset, e.Bytes = off, int64(len(data))
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.file != nil {
		e.Result = "400"
		s.recordLocked(e)
		writeStatus(w, http.StatusBadRequest, "FAILED_PRECONDITION", "the upload is already final")
		return
	}
	if err != nil || rerr != nil || off != u.received {
		e.Result = "400"
		s.recordLocked(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("X-Goog-Upload-Offset %s is not the %d bytes received", r.Header.Get("X-Goog-Upload-Offset"), u.received))
		return
	}
	if strings.Contains(u.displayName, "fake-upload-hang") && u.received > 0 && !u.hung {
		// Held open once: the client is killed here (the bytes are not
		// taken).
		u.hung = true
		e.Result = "hung"
		s.recordLocked(e)
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		s.mu.Lock()
		return
	}
	if u.received+int64(len(data)) > MaxUploadFileBytes || (u.declared >= 0 && u.received+int64(len(data)) > u.declared) {
		e.Result = "400"
		s.recordLocked(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", "more bytes than the upload declared")
		return
	}
	_, _ = u.hasher.Write(data)
	u.received += int64(len(data))
	e.Result = "200"
	if strings.Contains(u.displayName, "fake-chunk-fail-once") && u.received > int64(len(data)) && !u.failed {
		// Taken, then answered as if it failed: what the session holds
		// is only known by asking it.
		u.failed = true
		e.Result = "503-taken"
		s.recordLocked(e)
		writeStatus(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable.")
		return
	}
	if cmd == "upload" {
		s.recordLocked(e)
		w.Header().Set("X-Goog-Upload-Status", "active")
		w.WriteHeader(http.StatusOK)
		return
	}
	if u.declared >= 0 && u.received != u.declared {
		e.Result = "400"
		s.recordLocked(e)
		writeStatus(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("finalized at %d bytes; %d were declared", u.received, u.declared))
		return
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	fid := fmt.Sprintf("file-%s", strings.TrimPrefix(u.id, "up"))
	base := "http://" + r.Host + strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/upload"), "/files")
	f := &fakeFile{Name: "files/" + fid, DisplayName: u.displayName, MimeType: u.mime, SizeBytes: strconv.FormatInt(u.received, 10),
		CreateTime: now, UpdateTime: now, SHA256Hash: hex.EncodeToString(u.hasher.Sum(nil)), URI: base + "/files/" + fid, State: "ACTIVE", Source: "UPLOADED"}
	switch {
	case strings.Contains(u.displayName, "fake-processing-failed"):
		f.State, f.then = "PROCESSING", "FAILED"
	case strings.Contains(u.displayName, "fake-processing"):
		f.State, f.then = "PROCESSING", "ACTIVE"
	}
	u.file = f
	s.files[f.Name] = f
	e.UploadName, e.SHA256 = f.Name, f.SHA256Hash
	s.recordLocked(e)
	w.Header().Set("X-Goog-Upload-Status", "final")
	writeJSON(w, http.StatusOK, map[string]any{"file": f})
}

func (s *Server) file(w http.ResponseWriter, r *http.Request, e Entry, version, id string) {
	name := "files/" + id
	e.UploadName = name
	s.mu.Lock()
	f := s.files[name]
	if f != nil && f.deleted {
		f = nil
	}
	if f != nil && r.Method == http.MethodDelete {
		f.deleted = true
	}
	if f != nil && r.Method == http.MethodGet && f.State == "PROCESSING" {
		if f.gets++; f.gets >= 2 {
			f.State = f.then
			f.UpdateTime = time.Now().UTC().Format(time.RFC3339Nano)
		}
	}
	var doc fakeFile
	if f != nil {
		doc = *f
	}
	s.mu.Unlock()
	switch {
	case f == nil:
		e.Result = "404"
		s.record(e)
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "File "+id+" not found.")
	case r.Method == http.MethodGet:
		e.Result = "200"
		e.FileState = doc.State
		s.record(e)
		writeJSON(w, http.StatusOK, &doc)
	case r.Method == http.MethodDelete:
		e.Result = "200"
		s.record(e)
		writeJSON(w, http.StatusOK, map[string]any{})
	default:
		e.Result = "404"
		s.record(e)
		writeStatus(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
	}
}

// fileByURI is the live uploaded file a create's uri names, or nil.
func (s *Server) fileByURI(uri string) *fakeFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.URI == uri && !f.deleted {
			c := *f
			return &c
		}
	}
	return nil
}

// Files is how many files were uploaded and how many of them are deleted.
func (s *Server) Files() (uploaded, deleted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		uploaded++
		if f.deleted {
			deleted++
		}
	}
	return uploaded, deleted
}
