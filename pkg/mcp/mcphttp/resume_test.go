package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/mcp"
)

// A POST stream closed before its answer is resumed through GET with
// Last-Event-ID; the request is posted once. The refusals are clear.
func TestHTTPClientResume(t *testing.T) {
	for _, tc := range []struct {
		mode string
		code errs.Code
		text string
	}{
		{mode: "resume", text: "resumed after p-1; tools/call posted 1 time(s)"},
		{mode: "resume-lost", code: CodeResumeFailed, text: "5 attempts in a row"},
		{mode: "resume-refused", code: CodeResumeFailed, text: "GET answered 405"},
		{mode: "resume-no-id", code: CodeStreamEnded, text: "before it answered the request"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c, err := Start(context.Background(), Options{URL: serveFake(t, tc.mode)}, mcp.Options{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _, _ = c.Stop() }()
			res, err := c.Request(context.Background(), "tools/call", callTool("echo", map[string]any{}))
			if tc.code == "" {
				if err != nil || !strings.Contains(string(res), tc.text) {
					t.Fatalf("%s %v", res, err)
				}
				return
			}
			me := mcpErr(t, err)
			if me.Code != tc.code || !me.Delivered || !strings.Contains(me.Message, tc.text) {
				t.Fatalf("%+v", me)
			}
			// The connection is still usable: a failed resumption fails
			// its request only.
			if _, err := c.Request(context.Background(), "tools/list", nil); err != nil {
				t.Fatalf("after the failure: %v", err)
			}
		})
	}
}

// The server's retry interval is bounded, and an id that cannot travel
// as a header value is not resumed from.
func TestStreamPos(t *testing.T) {
	var p streamPos
	if d := p.delay(0); d != defaultRetry {
		t.Fatalf("no retry: %v", d)
	}
	p.retry, p.hasRetry = 0, true
	if d := p.delay(minGetRetry); d != minGetRetry {
		t.Fatalf("floor: %v", d)
	}
	p.retry = time.Hour
	if d := p.delay(0); d != maxRetry {
		t.Fatalf("cap: %v", d)
	}
	for _, id := range []string{"a\x01b", "é", strings.Repeat("x", maxEventIDBytes+1)} {
		if len(id) <= maxEventIDBytes && validHeaderValue(id) {
			t.Fatalf("%q accepted", id)
		}
	}
}

// In the 2026-07-28 era streams are not resumed: a closed stream is
// stream_ended and no GET is sent.
func TestHTTPClientNoResumeModern(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			mu.Lock()
			gets++
			mu.Unlock()
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		if m.Method == "server/discover" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`, m.ID)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: e-1\nretry: 10\ndata: \n\n")
	}))
	defer srv.Close()
	c, err := Start(context.Background(), Options{URL: srv.URL}, mcp.Options{ProtocolVersion: mcp.ModernProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.Stop() }()
	_, err = c.Request(context.Background(), "prompts/list", nil)
	if me := mcpErr(t, err); me.Code != CodeStreamEnded {
		t.Fatalf("%+v", me)
	}
	mu.Lock()
	defer mu.Unlock()
	if gets != 0 {
		t.Fatalf("%d GETs in the 2026-07-28 era", gets)
	}
}

// The GET stream is opened again after the server's retry interval with
// Last-Event-ID while the server goes on giving new ids, and given up
// after maxResumeAttempts reconnections that bring nothing.
func TestHTTPClientGetStreamReconnects(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			n := len(lastIDs)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if n <= 2 {
				_, _ = fmt.Fprintf(w, "id: g-%d\nretry: 10\ndata: \n\n", n)
			}
			if n == 2+maxResumeAttempts {
				close(gone)
			}
			return // the stream ends
		case http.MethodDelete:
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		w.Header().Set("Mcp-Session-Id", "s")
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"g","version":"1"}}}`, m.ID)
	}))
	defer srv.Close()
	c, err := Start(context.Background(), Options{URL: srv.URL}, mcp.Options{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the GET stream was not reopened")
	}
	_, _ = c.Stop()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"", "g-1", "g-2", "g-2", "g-2", "g-2", "g-2"}
	if strings.Join(lastIDs, ",") != strings.Join(want, ",") {
		t.Fatalf("Last-Event-IDs %q, want %q", lastIDs, want)
	}
}

// A -32022 in a 400 that lists the version asked for is retried once
// (SEP-2575), in auto and explicit mode; never more.
func TestHTTPClientVersionRetry(t *testing.T) {
	for _, v := range []string{mcp.AutoProtocolVersion, mcp.ModernProtocolVersion} {
		var mu sync.Mutex
		discovers := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &m)
			if m.Method == "server/discover" {
				mu.Lock()
				discovers++
				mu.Unlock()
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"no","data":{"supported":["2026-07-28"]}}}`, m.ID)
		}))
		_, err := Start(context.Background(), Options{URL: srv.URL, Transport: TransportStreamable}, mcp.Options{ProtocolVersion: v})
		srv.Close()
		if me := mcpErr(t, err); me.Code != mcp.CodeProtocolVersionUnsupported {
			t.Fatalf("%s: %+v", v, me)
		}
		mu.Lock()
		if discovers != 2 {
			t.Fatalf("%s: server/discover sent %d times, want 2", v, discovers)
		}
		mu.Unlock()
	}
}
