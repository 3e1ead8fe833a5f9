package google_test

// The plan, confirm and follow-up turns, inline parts, tools and image
// outputs held to google.golang.org/genai's interactions types, as
// sdk_test.go holds the plain create (docs/research.md, "The wire").

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "google.golang.org/genai/interactions/models/interactions"

	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

// rawFake serves the fake and keeps every create body as sent (the fake's
// own log replaces inline data and header values).
type rawFake struct {
	*fakeapi.Server
	URL    string
	mu     sync.Mutex
	bodies [][]byte
}

func startRawFake(t *testing.T) *rawFake {
	t.Helper()
	s, err := fakeapi.New("")
	if err != nil {
		t.Fatal(err)
	}
	rf := &rawFake{Server: s}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !bytes.HasSuffix([]byte(r.URL.Path), []byte("/cancel")) {
			b, _ := io.ReadAll(r.Body)
			rf.mu.Lock()
			rf.bodies = append(rf.bodies, b)
			rf.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); s.Close() })
	rf.URL = hs.URL
	return rf
}

func (rf *rawFake) client() *google.Client {
	return &google.Client{BaseURL: rf.URL + "/v1", APIKey: "test-key", HTTP: google.NewHTTPClient(), Timeout: 5 * time.Second}
}

func (rf *rawFake) last(t *testing.T) []byte {
	t.Helper()
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if len(rf.bodies) == 0 {
		t.Fatal("no create was sent")
	}
	return rf.bodies[len(rf.bodies)-1]
}

// sdkCreate decodes a create body into the SDK's CreateAgentInteraction
// and checks that it encodes back to the same JSON: no field unknown to
// the SDK.
func sdkCreate(t *testing.T, body []byte) sdk.CreateAgentInteraction {
	t.Helper()
	var req sdk.CreateAgentInteraction
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("not an SDK CreateAgentInteraction: %v\n%.600s", err, body)
	}
	back, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, body, back) {
		t.Fatalf("the SDK does not round-trip the create:\nsent %.800s\nSDK  %.800s", body, back)
	}
	return req
}

// until polls id until it ends, checking every body against the SDK.
func until(t *testing.T, rf *rawFake, id string) *google.Interaction {
	t.Helper()
	for i := 0; i < 10; i++ {
		req, _ := http.NewRequest(http.MethodGet, rf.URL+"/v1/interactions/"+id, nil)
		req.Header.Set("x-goog-api-key", "k")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		compareWithSDK(t, body)
		compareFiguresWithSDK(t, body)
		it, err := google.ParseInteraction(body)
		if err != nil {
			t.Fatal(err)
		}
		if google.Terminal(it.Status) {
			return it
		}
	}
	t.Fatalf("%s never ended", id)
	return nil
}

// compareFiguresWithSDK: the last figure clawkit keeps is the SDK's
// output_image (the last image of the turn), byte for byte.
func compareFiguresWithSDK(t *testing.T, body []byte) {
	t.Helper()
	var si sdk.Interaction
	if err := json.Unmarshal(body, &si); err != nil {
		t.Fatalf("not an SDK Interaction: %v", err)
	}
	it, err := google.ParseInteraction(body)
	if err != nil {
		t.Fatal(err)
	}
	figs := google.ExtractFigures(it, google.FigureBounds{})
	if si.OutputImage == nil || si.OutputImage.Data == nil {
		if len(figs.Figures) != 0 {
			t.Fatalf("clawkit keeps %d figures, the SDK has no output_image", len(figs.Figures))
		}
		return
	}
	want, err := base64.StdEncoding.DecodeString(*si.OutputImage.Data)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs.Figures) == 0 || !bytes.Equal(figs.Figures[len(figs.Figures)-1].Data, want) {
		t.Fatalf("the last figure is not the SDK's output_image (%d figures)", len(figs.Figures))
	}
	if string(*si.OutputImage.MimeType) != figs.Figures[len(figs.Figures)-1].MimeType {
		t.Fatalf("figure type %s, SDK %s", figs.Figures[len(figs.Figures)-1].MimeType, *si.OutputImage.MimeType)
	}
}

// TestPlanConfirmFollowUpAreTheSDKs: the plan turn asks for collaborative
// planning, the confirming turn follows the plan with it off, the
// follow-up follows the report; every body both ways is the SDK's, the
// plan is the SDK's output_text of the plan turn.
func TestPlanConfirmFollowUpAreTheSDKs(t *testing.T) {
	rf := startRawFake(t)
	c := rf.client()
	ctx := context.Background()
	yes, no := true, false
	plan, err := c.CreateWith(ctx, google.CreateRequest{Input: "sky", CollaborativePlanning: &yes})
	if err != nil {
		t.Fatal(err)
	}
	req := sdkCreate(t, rf.last(t))
	dr := req.GetAgentConfigDeepResearch()
	if dr == nil || dr.CollaborativePlanning == nil || !*dr.CollaborativePlanning || req.PreviousInteractionID != nil {
		t.Fatalf("plan turn: %s", rf.last(t))
	}
	done := until(t, rf, plan.ID)
	if rep := google.ExtractReport(done, google.Bounds{}); rep.Text != fakeapi.PlanText {
		t.Fatalf("plan %q", rep.Text)
	}

	confirm, err := c.CreateWith(ctx, google.CreateRequest{Input: "go", PreviousInteractionID: plan.ID, CollaborativePlanning: &no, Visualization: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	req = sdkCreate(t, rf.last(t))
	dr = req.GetAgentConfigDeepResearch()
	if req.PreviousInteractionID == nil || *req.PreviousInteractionID != plan.ID || dr.CollaborativePlanning == nil || *dr.CollaborativePlanning ||
		dr.Visualization == nil || !dr.Visualization.IsExact() || *dr.Visualization != sdk.VisualizationAuto {
		t.Fatalf("confirming turn: %s", rf.last(t))
	}
	done = until(t, rf, confirm.ID)
	if rep := google.ExtractReport(done, google.Bounds{}); rep.Text != fakeapi.ReportText {
		t.Fatalf("report %q", rep.Text)
	}
	if figs := google.ExtractFigures(done, google.FigureBounds{}); len(figs.Figures) != 2 || figs.Dropped != 0 {
		t.Fatalf("figures %+v", figs)
	}

	fu, err := c.CreateWith(ctx, google.CreateRequest{Input: "and at sunset?", PreviousInteractionID: confirm.ID})
	if err != nil {
		t.Fatal(err)
	}
	req = sdkCreate(t, rf.last(t))
	if req.PreviousInteractionID == nil || *req.PreviousInteractionID != confirm.ID {
		t.Fatalf("follow-up: %s", rf.last(t))
	}
	done = until(t, rf, fu.ID)
	if rep := google.ExtractReport(done, google.Bounds{}); rep.Text != fakeapi.FollowUpText(confirm.ID) {
		t.Fatalf("follow-up report %q", rep.Text)
	}

	// A turn must follow an interaction the API knows, and a finished one.
	if _, err := c.CreateWith(ctx, google.CreateRequest{Input: "x", PreviousInteractionID: "v1_nosuch"}); google.AsError(err) == nil || google.AsError(err).HTTPStatus != 404 {
		t.Fatalf("unknown previous: %v", err)
	}
	running, _ := c.Create(ctx, "still running fake:never")
	if _, err := c.CreateWith(ctx, google.CreateRequest{Input: "x", PreviousInteractionID: running.ID}); google.AsError(err) == nil || google.AsError(err).HTTPStatus != 400 {
		t.Fatalf("unfinished previous: %v", err)
	}
}

// TestPartsAndToolsAreTheSDKs: documents and images are the SDK's
// DocumentContent and ImageContent (MIME types of its enums, base64
// data), the tools its FileSearch, URLContext and MCPServer; the tool
// steps the fake serves decode into its steps and never reach the report.
func TestPartsAndToolsAreTheSDKs(t *testing.T) {
	rf := startRawFake(t)
	c := rf.client()
	png := fakeapi.FigurePNGs()[0]
	cr := google.CreateRequest{
		Input: "read these",
		Parts: []google.Part{{MimeType: "application/pdf", Data: []byte("%PDF-1.4\n")}, {MimeType: "text/csv", Data: []byte("a,b\n1,2\n")}, {MimeType: "image/png", Data: png}},
		Tools: []google.Tool{{FileSearchStores: []string{"fileSearchStores/s1"}}, {URLContext: true},
			{MCPServer: &google.MCPServer{Name: "srch", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer t0ken"}}}},
	}
	it, err := c.CreateWith(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	req := sdkCreate(t, rf.last(t))
	if req.Input == nil || len(req.Input.ArrayOfContent) != 4 {
		t.Fatalf("input is not a content list of 4: %s", rf.last(t))
	}
	in := req.Input.ArrayOfContent
	if in[0].TextContent == nil || in[0].TextContent.Text != "read these" {
		t.Fatalf("text part: %+v", in[0])
	}
	for i, want := range cr.Parts {
		c := in[i+1]
		var mime, data string
		switch {
		case c.DocumentContent != nil && c.DocumentContent.MimeType.IsExact():
			mime, data = string(*c.DocumentContent.MimeType), *c.DocumentContent.Data
		case c.ImageContent != nil && c.ImageContent.MimeType.IsExact():
			mime, data = string(*c.ImageContent.MimeType), *c.ImageContent.Data
		default:
			t.Fatalf("part %d is not an SDK document or image of a known type: %+v", i, c)
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if mime != want.MimeType || err != nil || !bytes.Equal(b, want.Data) {
			t.Fatalf("part %d: %s %v", i, mime, err)
		}
	}
	if len(req.Tools) != 3 || req.Tools[0].FileSearch == nil || req.Tools[0].FileSearch.FileSearchStoreNames[0] != "fileSearchStores/s1" ||
		req.Tools[1].URLContext == nil || req.Tools[2].MCPServer == nil || *req.Tools[2].MCPServer.URL != "https://mcp.example.com/mcp" ||
		req.Tools[2].MCPServer.Headers["Authorization"] != "Bearer t0ken" {
		t.Fatalf("tools: %s", rf.last(t))
	}
	done := until(t, rf, it.ID)
	if rep := google.ExtractReport(done, google.Bounds{}); rep.Text != fakeapi.PartsText(3) {
		t.Fatalf("report %q", rep.Text)
	}
	kinds := map[string]bool{}
	for _, st := range done.Steps {
		kinds[st.Type] = true
	}
	for _, k := range []string{"file_search_call", "file_search_result", "url_context_call", "url_context_result", "mcp_server_tool_call", "mcp_server_tool_result"} {
		if !kinds[k] {
			t.Fatalf("no %s step", k)
		}
	}
	// A part of a type the SDK enums do not name is never sent; the fake
	// refuses one as the API does.
	n := len(rf.Requests())
	bad := google.CreateRequest{Input: "x", Parts: []google.Part{{MimeType: "text/plain", Data: []byte("x")}}}
	if _, err := c.CreateWith(context.Background(), bad); google.AsError(err) == nil || !google.AsError(err).NotSent || len(rf.Requests()) != n {
		t.Fatalf("text/plain part: %v", err)
	}
	raw := `{"agent":"a","background":true,"input":[{"type":"text","text":"x"},{"type":"document","mime_type":"text/plain","data":"eA=="}]}`
	hreq, _ := http.NewRequest(http.MethodPost, rf.URL+"/v1/interactions", bytes.NewReader([]byte(raw)))
	hreq.Header.Set("x-goog-api-key", "k")
	r, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Fatalf("the fake accepted a text/plain document: %d", r.StatusCode)
	}
}

// planBodies are plan turns as the fake and hand-made timelines give them.
var planBodies = []string{
	`{"id":"p","status":"completed","steps":[{"type":"user_input","content":[{"type":"text","text":"q"}]},{"type":"thought","signature":"s"},{"type":"model_output","content":[{"type":"text","text":"## Plan\n1. a\n"}]}]}`,
	`{"id":"p","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"old"}]},{"type":"user_input","content":[{"type":"text","text":"q"}]},{"type":"model_output","content":[{"type":"text","text":"1. "},{"type":"text","text":"Plan ✓"}]}]}`,
	`{"id":"p","status":"completed","steps":[{"type":"user_input","content":[{"type":"text","text":"q"}]}]}`,
}

// FuzzPlanTextMatchesSDK: the plan clawkit publishes is the SDK's
// output_text of the plan turn, whenever both read the body.
func FuzzPlanTextMatchesSDK(f *testing.F) {
	for _, b := range planBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var si sdk.Interaction
		if json.Unmarshal(body, &si) != nil || si.ID == nil {
			return
		}
		it, err := google.ParseInteraction(body)
		if err != nil {
			return
		}
		want := ""
		if si.OutputText != nil {
			want = *si.OutputText
		}
		if got := google.PlanText(it, 0); got != want {
			t.Fatalf("plan %q, SDK output_text %q", got, want)
		}
	})
}

// FuzzFiguresMatchSDK: when the SDK's output_image (the turn's last
// image) is a valid figure, it is the last figure clawkit saves.
func FuzzFiguresMatchSDK(f *testing.F) {
	png := base64.StdEncoding.EncodeToString(fakeapi.FigurePNGs()[0])
	f.Add([]byte(`{"id":"a","status":"completed","steps":[` + imageStep("image/png", png) + `,{"type":"model_output","content":[{"type":"text","text":"r"},` +
		`{"type":"image","mime_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(fakeapi.FigurePNGs()[1]) + `"}]}]}`))
	f.Add([]byte(`{"id":"a","status":"completed","steps":[` + imageStep("image/png", png) + `,{"type":"user_input","content":[]},` + imageStep("image/gif", "R0lGODlhAQABAAAAACw=") + `]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var si sdk.Interaction
		if json.Unmarshal(body, &si) != nil || si.ID == nil || si.OutputImage == nil || si.OutputImage.Data == nil || si.OutputImage.MimeType == nil {
			return
		}
		it, err := google.ParseInteraction(body)
		if err != nil {
			return
		}
		data, err := base64.StdEncoding.DecodeString(*si.OutputImage.Data)
		mime := string(*si.OutputImage.MimeType)
		if err != nil || len(data) == 0 || http.DetectContentType(data) != mime {
			return // not a figure clawkit keeps
		}
		switch mime {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
		default:
			return
		}
		figs := google.ExtractFigures(it, google.FigureBounds{})
		if len(figs.Figures) == 0 || !bytes.Equal(figs.Figures[len(figs.Figures)-1].Data, data) {
			t.Fatalf("the SDK's output_image is not the last figure (%d figures)", len(figs.Figures))
		}
	})
}
