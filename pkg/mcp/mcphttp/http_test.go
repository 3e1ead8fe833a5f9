package mcphttp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
)

func serveFake(t *testing.T, mode string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, path := mcpfake.HTTPHandler(mode, ln.Addr().String())
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + path
}

// Each hostile server is a clear error, in bounded memory (a 1 GiB event
// or body costs at most about the frame limit), and the client leaves no
// goroutine behind.
func TestHTTPClientHostile(t *testing.T) {
	for _, tc := range []struct {
		mode string
		code errs.Code
		h    Options
		o    mcp.Options
	}{
		{mode: "endless-line", code: "sse_line_too_long"},
		{mode: "huge-event", code: "frame_too_large"},
		{mode: "huge-json", code: "frame_too_large"},
		{mode: "slowloris", code: "request_timeout", o: mcp.Options{RequestTimeout: 300 * time.Millisecond}},
		{mode: "silent-stream", code: "idle_timeout", h: Options{IdleTimeout: 200 * time.Millisecond}},
		{mode: "slow-headers", code: "header_timeout", h: Options{HeaderTimeout: 2 * time.Second}}, // long enough for the opening on a loaded machine
		{mode: "wrong-ctype", code: "bad_content_type"},
		{mode: "session-change", code: "session_id_changed"},
		{mode: "redirect", code: "redirect_refused"},
		{mode: "expire", code: "session_expired"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			u := serveFake(t, tc.mode)
			runtime.GC()
			before := runtime.NumGoroutine()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			o := tc.o
			o.ProtocolVersion = mcp.AutoProtocolVersion
			o.MaxFrameBytes = 1 << 20
			h := tc.h
			h.URL = u
			c, err := Start(context.Background(), h, o)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			_, err = c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"x"}`))
			if me := mcpErr(t, err); me.Code != tc.code {
				t.Fatalf("code %s (%s), want %s", me.Code, me.Message, tc.code)
			}
			if c.IsAvailable() && tc.code != "http_status" {
				t.Errorf("still available after %s", tc.code)
			}
			_, _ = c.Stop()
			runtime.ReadMemStats(&ms1)
			if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB for one refused answer (frame limit 1 MiB)", grew>>20)
			}
			n := runtime.NumGoroutine()
			for i := 0; i < 300 && n > before; i++ {
				time.Sleep(10 * time.Millisecond)
				n = runtime.NumGoroutine()
			}
			if n > before {
				buf := make([]byte, 1<<20)
				t.Fatalf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TLS is verified: a server whose certificate this system does not trust
// is refused before any message is sent.
func TestHTTPClientVerifiesTLS(t *testing.T) {
	h, _ := mcpfake.HTTPHandler("echo", "")
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	_, err := Start(context.Background(), Options{URL: srv.URL + "/mcp"}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion})
	if me := mcpErr(t, err); me.Code != "tls_failed" || !me.Definitive {
		t.Fatalf("%+v", me)
	}
	// With the server's CA trusted (a transport the caller builds), the
	// same server answers.
	c, err := Start(context.Background(), Options{URL: srv.URL + "/mcp", RoundTripper: srv.Client().Transport}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Stop()
}

// The auto mode's probe over HTTP: a server that never answers
// server/discover is taken for a legacy one once the probe bound has
// passed since the request was written, not failed.
func TestHTTPClientSilentProbe(t *testing.T) {
	u := serveFake(t, "silent-probe")
	c, err := Start(context.Background(), Options{URL: u}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion, ProbeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if n := c.Negotiated(); n.Era != mcp.EraLegacy || n.Probe != "discover-timeout" {
		t.Fatalf("%+v", n)
	}
	res, err := c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"echo","arguments":{"message":"x"}}`))
	if err != nil || !strings.Contains(string(res), "Echo: x") {
		t.Fatalf("%s %v", res, err)
	}
}
