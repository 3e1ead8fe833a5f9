package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/redact"
)

// The Files API's resumable upload, as google.golang.org/genai's
// Files.Upload and @google/genai's files.upload speak it
// (docs/research.md, "Files larger than the inline limits"): a start
// request to {server}/upload/{version}/files answers with the session's
// X-Goog-Upload-Url; each chunk is a POST to that URL with
// X-Goog-Upload-Command "upload" (the last one "upload, finalize") and its
// X-Goog-Upload-Offset; the answer's X-Goog-Upload-Status is "active"
// until the last, "final" with the file. The "query" command (Google's
// resumable protocol; the SDKs never need it) answers how many bytes the
// session holds, which is how an interrupted upload goes on without
// sending them again.

// UploadChunkBytes is the size of every chunk but the last: the SDKs'
// 8 MiB (a multiple of the protocol's 256 KiB granularity).
const UploadChunkBytes = 8 << 20

// File is the part of the SDKs' File an upload's answer carries.
type File struct {
	Name      string `json:"name"`
	URI       string `json:"uri"`
	MimeType  string `json:"mimeType"`
	SizeBytes string `json:"sizeBytes"`
	State     string `json:"state"`
}

var fileNameRE = regexp.MustCompile(`^files/[a-z0-9-]{1,64}$`)

// CheckFileName validates a Files API file name ("files/ID").
func CheckFileName(name string) error {
	if !fileNameRE.MatchString(name) {
		return fmt.Errorf("%q is not a Files API file name (files/ID)", truncateForMsg(name))
	}
	return nil
}

// uploadBase is the upload endpoint beside the API's: the base URL's
// version segment with "upload/" before it.
func (c *Client) uploadBase() (string, error) {
	b := c.base()
	i := strings.LastIndexByte(b, '/')
	u, err := url.Parse(b)
	if err != nil || i < 0 || u.Path == "" || u.Path == "/" {
		return "", fmt.Errorf("base URL %q names no API version", redact.URL(b))
	}
	return b[:i] + "/upload" + b[i:] + "/files", nil
}

// sameOrigin reports whether raw is on the base URL's scheme and host: an
// upload URL anywhere else is refused, so the API key is never sent to
// another server.
func (c *Client) sameOrigin(raw string) bool {
	u, err := url.Parse(raw)
	b, berr := url.Parse(c.base())
	return err == nil && berr == nil && u.Scheme == b.Scheme && u.Host == b.Host && u.User == nil
}

// StartUpload opens a resumable upload session for size bytes of mime and
// returns its URL. Nothing of the file is sent.
func (c *Client) StartUpload(ctx context.Context, size int64, mime, displayName string) (string, error) {
	endpoint, err := c.uploadBase()
	if err != nil {
		return "", &Error{Op: "upload", NotSent: true, Msg: "upload: " + err.Error(), Err: err}
	}
	body, _ := json.Marshal(map[string]any{"file": map[string]string{"displayName": displayName, "mimeType": mime}})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Goog-Upload-Protocol", "resumable")
	h.Set("X-Goog-Upload-Command", "start")
	h.Set("X-Goog-Upload-Header-Content-Type", mime)
	h.Set("X-Goog-Upload-Header-Content-Length", strconv.FormatInt(size, 10))
	status, hdr, resp, sent, err := c.doURL(ctx, http.MethodPost, endpoint, h, body)
	if err != nil {
		return "", &Error{Op: "upload", NotSent: !sent, Temporary: true, Msg: transportMsg("upload", err, sent), Err: err}
	}
	if status < 200 || status >= 300 {
		return "", c.statusError("upload", status, hdr, resp)
	}
	u := hdr.Get("X-Goog-Upload-Url")
	if u == "" || !c.sameOrigin(u) || len(u) > 4096 {
		return "", &Error{Op: "upload", HTTPStatus: status, Msg: "upload: the provider's answer names no upload URL on its own server"}
	}
	return u, nil
}

// UploadState is what a session says of itself: "active" with the bytes
// it holds, or "final" with the file.
type UploadState struct {
	Status   string
	Received int64
	File     *File
}

// QueryUpload asks a session how many bytes it holds.
func (c *Client) QueryUpload(ctx context.Context, uploadURL string) (*UploadState, error) {
	if !c.sameOrigin(uploadURL) {
		return nil, &Error{Op: "upload", NotSent: true, Msg: "upload: the session URL is not on the provider's server"}
	}
	h := http.Header{}
	h.Set("X-Goog-Upload-Command", "query")
	status, hdr, resp, sent, err := c.doURL(ctx, http.MethodPost, uploadURL, h, nil)
	if err != nil {
		return nil, &Error{Op: "upload", NotSent: !sent, Temporary: true, Msg: transportMsg("upload", err, sent), Err: err}
	}
	return c.uploadAnswer(status, hdr, resp)
}

// UploadChunk sends chunk at offset; last finalizes the upload.
func (c *Client) UploadChunk(ctx context.Context, uploadURL string, offset int64, chunk []byte, last bool) (*UploadState, error) {
	if !c.sameOrigin(uploadURL) {
		return nil, &Error{Op: "upload", NotSent: true, Msg: "upload: the session URL is not on the provider's server"}
	}
	cmd := "upload"
	if last {
		cmd = "upload, finalize"
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json") // as the SDKs send every chunk
	h.Set("X-Goog-Upload-Command", cmd)
	h.Set("X-Goog-Upload-Offset", strconv.FormatInt(offset, 10))
	status, hdr, resp, sent, err := c.doURL(ctx, http.MethodPost, uploadURL, h, chunk)
	if err != nil {
		return nil, &Error{Op: "upload", NotSent: !sent, Temporary: true, Msg: transportMsg("upload", err, sent), Err: err}
	}
	st, err := c.uploadAnswer(status, hdr, resp)
	if err != nil {
		return nil, err
	}
	if last && st.Status != "final" {
		return nil, &Error{Op: "upload", HTTPStatus: status, Msg: fmt.Sprintf("upload: the last chunk was answered with status %q, not final", truncateForMsg(st.Status))}
	}
	return st, nil
}

func (c *Client) uploadAnswer(status int, hdr http.Header, resp []byte) (*UploadState, error) {
	if status < 200 || status >= 300 {
		e := c.statusError("upload", status, hdr, resp)
		if status >= 500 {
			e.Temporary = true
		}
		return nil, e
	}
	st := &UploadState{Status: hdr.Get("X-Goog-Upload-Status")}
	switch st.Status {
	case "active":
		if v := hdr.Get("X-Goog-Upload-Size-Received"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, &Error{Op: "upload", HTTPStatus: status, Msg: "upload: the session reports an unusable size received"}
			}
			st.Received = n
		}
	case "final":
		var v struct {
			File *File `json:"file"`
		}
		if json.Unmarshal(resp, &v) != nil || v.File == nil || CheckFileName(v.File.Name) != nil || !c.sameOrigin(v.File.URI) {
			return nil, &Error{Op: "upload", HTTPStatus: status, Msg: "upload: the final answer carries no usable file"}
		}
		if v.File.State == FileFailed {
			return nil, &Error{Op: "upload", HTTPStatus: status, Msg: "upload: the provider could not process the file (state FAILED)"}
		}
		st.File = v.File
	default:
		return nil, &Error{Op: "upload", HTTPStatus: status, Msg: fmt.Sprintf("upload: the session answered status %q", truncateForMsg(st.Status))}
	}
	return st, nil
}

// File states (the SDKs' FileState): a file PROCESSING cannot be used
// yet; one FAILED never can.
const (
	FileProcessing = "PROCESSING"
	FileActive     = "ACTIVE"
	FileFailed     = "FAILED"
)

// GetFile reads a Files API file (GET /{version}/files/ID), as the SDKs'
// Files.Get: how a file PROCESSING is awaited.
func (c *Client) GetFile(ctx context.Context, name string) (*File, error) {
	if err := CheckFileName(name); err != nil {
		return nil, &Error{Op: "file", NotSent: true, Msg: err.Error(), Err: err}
	}
	status, hdr, resp, sent, err := c.do(ctx, http.MethodGet, "/"+name, nil)
	if err != nil {
		return nil, &Error{Op: "file", NotSent: !sent, Temporary: true, Msg: transportMsg("file", err, sent), Err: err}
	}
	if status < 200 || status >= 300 {
		e := c.statusError("file", status, hdr, resp)
		if status >= 500 {
			e.Temporary = true
		}
		return nil, e
	}
	var f File
	if json.Unmarshal(resp, &f) != nil || f.Name != name || !c.sameOrigin(f.URI) {
		return nil, &Error{Op: "file", HTTPStatus: status, Temporary: true, Msg: "file: the answer is not the file " + name}
	}
	return &f, nil
}

// DeleteFile deletes a Files API file. A file already gone (404) is
// deleted.
func (c *Client) DeleteFile(ctx context.Context, name string) error {
	if err := CheckFileName(name); err != nil {
		return &Error{Op: "delete", NotSent: true, Msg: err.Error(), Err: err}
	}
	status, hdr, resp, sent, err := c.do(ctx, http.MethodDelete, "/"+name, nil)
	if err != nil {
		return &Error{Op: "delete", NotSent: !sent, Temporary: true, Msg: transportMsg("delete", err, sent), Err: err}
	}
	if (status >= 200 && status < 300) || status == http.StatusNotFound {
		return nil
	}
	return c.statusError("delete", status, hdr, resp)
}

// doURL is do for an absolute URL with the caller's headers (the upload
// protocol's), the API key added.
func (c *Client) doURL(ctx context.Context, method, u string, h http.Header, body []byte) (status int, hdr http.Header, resp []byte, sent bool, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if len(body) > 0 {
		// A chunk is up to 8 MiB: a request's bound grows with it (at
		// least 1 MiB/s), never unbounded.
		timeout += time.Duration(1+len(body)>>20) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { sent = true }}
	ctx = httptrace.WithClientTrace(ctx, trace)
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, false, err
	}
	req.Header = h
	req.Header.Set("x-goog-api-key", c.APIKey)
	req.Header.Set("User-Agent", "clawkit-research")
	req.ContentLength = int64(len(body))
	r, err := c.httpClient().Do(req)
	if err != nil {
		return 0, nil, nil, sent, err
	}
	defer func() { _ = r.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return 0, nil, nil, true, err
	}
	if len(data) > 1<<20 {
		return 0, nil, nil, true, errors.New("the upload answer is larger than 1 MiB")
	}
	return r.StatusCode, r.Header, redact.Bytes(data, c.APIKey), true, nil
}
