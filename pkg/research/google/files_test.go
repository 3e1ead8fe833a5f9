package google_test

// Uploads through the Files API held to Google's Go client: the fake
// serves google.golang.org/genai's Files.Upload, Get and Delete, and
// clawkit's own upload (resumed by a query after an interruption) lands a
// file whose uri the create names, with a processing the SDK's
// DocumentContent decodes (docs/research.md, "Files larger than the inline
// limits").

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"
	sdk "google.golang.org/genai/interactions/models/interactions"

	"github.com/clawkit/clawkit/pkg/research/google"
)

func fileBytes(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
	copy(b, "%PDF-1.4\n")
	return b
}

// Google's Go client uploads to the fake (two chunks: 8 MiB and the rest),
// reads the file back and deletes it.
func TestGenaiGoClientUploadsToFake(t *testing.T) {
	rf := startRawFake(t)
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "sdk-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: rf.URL, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	data := fileBytes(google.UploadChunkBytes + 1000)
	f, err := client.Files.Upload(ctx, bytes.NewReader(data), &genai.UploadFileConfig{MIMEType: "application/pdf", DisplayName: "big.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if !strings.HasPrefix(f.Name, "files/") || !strings.HasPrefix(f.URI, rf.URL+"/v1beta/files/") || f.MIMEType != "application/pdf" ||
		f.SizeBytes == nil || *f.SizeBytes != int64(len(data)) || f.State != genai.FileStateActive || f.DisplayName != "big.pdf" || string(f.Sha256Hash) != hex.EncodeToString(sum[:]) {
		t.Fatalf("%+v", f)
	}
	got, err := client.Files.Get(ctx, f.Name, nil)
	if err != nil || got.URI != f.URI {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := client.Files.Delete(ctx, f.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Files.Get(ctx, f.Name, nil); err == nil {
		t.Fatal("a deleted file is still served")
	}
	if up, del := rf.Files(); up != 1 || del != 1 {
		t.Fatalf("uploaded %d, deleted %d", up, del)
	}
}

// A file the fake processes (fake-processing) is PROCESSING in the upload's
// answer as Google's Go client reads it, then ACTIVE at the second Files.Get;
// clawkit's GetFile reads the same states. fake-processing-failed ends
// FAILED.
func TestFakeProcessingIsTheSDKsFileState(t *testing.T) {
	rf := startRawFake(t)
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "sdk-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: rf.URL, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &google.Client{BaseURL: rf.URL + "/v1beta", APIKey: "sdk-key"}
	for name, want := range map[string]genai.FileState{"a-fake-processing.pdf": genai.FileStateActive, "b-fake-processing-failed.pdf": genai.FileStateFailed} {
		f, err := client.Files.Upload(ctx, bytes.NewReader(fileBytes(1000)), &genai.UploadFileConfig{MIMEType: "application/pdf", DisplayName: name})
		if err != nil || f.State != genai.FileStateProcessing {
			t.Fatalf("%s: %+v %v", name, f, err)
		}
		got, err := c.GetFile(ctx, f.Name)
		if err != nil || got.State != google.FileProcessing || got.URI != f.URI {
			t.Fatalf("%s: %+v %v", name, got, err)
		}
		sdk, err := client.Files.Get(ctx, f.Name, nil)
		if err != nil || sdk.State != want || string(want) != map[genai.FileState]string{genai.FileStateActive: google.FileActive, genai.FileStateFailed: google.FileFailed}[want] {
			t.Fatalf("%s: %+v %v", name, sdk, err)
		}
	}
	if _, err := c.GetFile(ctx, "files/nope"); err == nil {
		t.Fatal("an unknown file was read")
	}
}

// clawkit's upload: a session, one chunk, an interruption, a query that
// says what the session holds, the rest from there (the first chunk is
// not sent again), then a create naming the file by uri with a page range
// (the SDK's DocumentContent with DocumentStaticMediaProcessing), then
// the delete; a create naming a deleted file is refused.
func TestUploadResumeCreateDelete(t *testing.T) {
	rf := startRawFake(t)
	c := rf.client()
	ctx := context.Background()
	data := fileBytes(google.UploadChunkBytes*2 + 77)
	sess, err := c.StartUpload(ctx, int64(len(data)), google.MimeDOCX, "report.docx")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.UploadChunk(ctx, sess, 0, data[:google.UploadChunkBytes], false)
	if err != nil || st.Status != "active" {
		t.Fatalf("%+v %v", st, err)
	}
	// A wrong offset is refused by the session, as the API refuses it.
	if _, err := c.UploadChunk(ctx, sess, 5, data[5:10], false); err == nil {
		t.Fatal("a chunk at the wrong offset was taken")
	}
	q, err := c.QueryUpload(ctx, sess)
	if err != nil || q.Status != "active" || q.Received != google.UploadChunkBytes {
		t.Fatalf("query: %+v %v", q, err)
	}
	if _, err := c.UploadChunk(ctx, sess, q.Received, data[q.Received:2*google.UploadChunkBytes], false); err != nil {
		t.Fatal(err)
	}
	st, err = c.UploadChunk(ctx, sess, 2*google.UploadChunkBytes, data[2*google.UploadChunkBytes:], true)
	if err != nil || st.Status != "final" || st.File == nil || st.File.MimeType != google.MimeDOCX {
		t.Fatalf("%+v %v", st, err)
	}
	// A query after the end answers the file.
	if q, err := c.QueryUpload(ctx, sess); err != nil || q.Status != "final" || q.File.URI != st.File.URI {
		t.Fatalf("query after final: %+v %v", q, err)
	}
	cr := google.CreateRequest{Input: "read it", Parts: []google.Part{
		{MimeType: google.MimeDOCX, URI: st.File.URI, Resolution: "high", Processing: &google.Processing{Pages: &google.PageOptions{StartPage: 2, EndPage: 5, ContentLayers: []string{"page_text"}}}},
		{MimeType: google.MimeXLSX, Data: []byte("PK"), Processing: &google.Processing{Sheet: &google.SheetOptions{SheetIndex: 2, VisibleCells: "A1:D10", ContentLayers: []string{"data", "formulas"}}}},
	}}
	if _, err := c.CreateWith(ctx, cr); err != nil {
		t.Fatal(err)
	}
	req := sdkCreate(t, rf.last(t))
	in := req.Input.ArrayOfContent
	if len(in) != 3 || in[1].DocumentContent == nil || in[2].DocumentContent == nil {
		t.Fatalf("%s", rf.last(t))
	}
	d := in[1].DocumentContent
	if d.URI == nil || *d.URI != st.File.URI || d.Data != nil || !d.MimeType.IsExact() || *d.MimeType != sdk.DocumentContentMimeTypeApplicationVndOpenxmlformatsOfficedocumentWordprocessingmlDocument ||
		d.Processing == nil || d.Processing.DocumentMediaProcessing == nil || d.Processing.DocumentMediaProcessing.DocumentStaticMediaProcessing == nil {
		t.Fatalf("document by uri: %s", rf.last(t))
	}
	po := d.Processing.DocumentMediaProcessing.DocumentStaticMediaProcessing.PageOptions
	if po == nil || po.StartPage == nil || *po.StartPage != 2 || po.EndPage == nil || *po.EndPage != 5 ||
		len(po.ContentLayers) != 1 || po.ContentLayers[0] != sdk.PageProcessingOptionsContentLayerPageText || !po.ContentLayers[0].ToPointer().IsExact() ||
		d.Resolution == nil || *d.Resolution != sdk.MediaResolutionHigh {
		t.Fatalf("page options: %s", rf.last(t))
	}
	x := in[2].DocumentContent
	if x.Processing == nil || x.Processing.DocumentMediaProcessing == nil || x.Processing.DocumentMediaProcessing.DocumentStaticMediaProcessing == nil {
		t.Fatalf("sheet: %s", rf.last(t))
	}
	so := x.Processing.DocumentMediaProcessing.DocumentStaticMediaProcessing.SpreadsheetOptions
	if so == nil || so.SheetIndex == nil || *so.SheetIndex != 2 || so.VisibleCells == nil || *so.VisibleCells != "A1:D10" ||
		len(so.ContentLayers) != 2 || so.ContentLayers[0] != sdk.SpreadsheetProcessingOptionsContentLayerData || so.ContentLayers[1] != sdk.SpreadsheetProcessingOptionsContentLayerFormulas || x.Resolution != nil {
		t.Fatalf("spreadsheet options: %s", rf.last(t))
	}
	if err := c.DeleteFile(ctx, st.File.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFile(ctx, st.File.Name); err != nil {
		t.Fatalf("a second delete (the file is gone): %v", err)
	}
	_, err = c.CreateWith(ctx, google.CreateRequest{Input: "again", Parts: cr.Parts[:1]})
	if ge := google.AsError(err); ge == nil || ge.HTTPStatus != http.StatusBadRequest {
		t.Fatalf("a create naming a deleted file: %v", err)
	}
}

// An upload URL on another server is refused before the key goes there.
func TestUploadURLElsewhereRefused(t *testing.T) {
	rf := startRawFake(t)
	c := rf.client()
	c.Timeout = 2 * time.Second
	for _, u := range []string{"https://elsewhere.example/upload?upload_id=x", "http://user@" + strings.TrimPrefix(rf.URL, "http://") + "/upload"} {
		if _, err := c.QueryUpload(context.Background(), u); err == nil {
			t.Errorf("%s: queried", u)
		}
		if _, err := c.UploadChunk(context.Background(), u, 0, []byte("x"), true); err == nil {
			t.Errorf("%s: uploaded", u)
		}
	}
	if err := c.DeleteFile(context.Background(), "files/../interactions"); err == nil {
		t.Error("a file name with a path was deleted")
	}
}

// The content layers and resolutions clawkit offers are exactly values of
// the SDK's enums (PageProcessingOptionsContentLayer,
// SpreadsheetProcessingOptionsContentLayer, MediaResolution), and a value
// outside them is not.
func TestLayersAndResolutionsAreTheSDKs(t *testing.T) {
	for _, l := range google.PageLayers {
		if !sdk.PageProcessingOptionsContentLayer(l).ToPointer().IsExact() {
			t.Errorf("page layer %q", l)
		}
	}
	for _, l := range google.SheetLayers {
		if !sdk.SpreadsheetProcessingOptionsContentLayer(l).ToPointer().IsExact() {
			t.Errorf("sheet layer %q", l)
		}
	}
	for _, r := range google.MediaResolutions {
		if !sdk.MediaResolution(r).ToPointer().IsExact() {
			t.Errorf("resolution %q", r)
		}
	}
	if sdk.PageProcessingOptionsContentLayer("frames").ToPointer().IsExact() || sdk.MediaResolution("max").ToPointer().IsExact() {
		t.Fatal("the SDK's enums take anything: this test cannot fail")
	}
	// Every value the SDK names is offered (its constants, as of v1.79.1).
	for _, v := range []string{string(sdk.PageProcessingOptionsContentLayerPageImage), string(sdk.PageProcessingOptionsContentLayerPageText)} {
		if !slices.Contains(google.PageLayers, v) {
			t.Errorf("page layer %q not offered", v)
		}
	}
	for _, v := range []string{string(sdk.SpreadsheetProcessingOptionsContentLayerVisual), string(sdk.SpreadsheetProcessingOptionsContentLayerData), string(sdk.SpreadsheetProcessingOptionsContentLayerFormulas)} {
		if !slices.Contains(google.SheetLayers, v) {
			t.Errorf("sheet layer %q not offered", v)
		}
	}
	for _, v := range []sdk.MediaResolution{sdk.MediaResolutionLow, sdk.MediaResolutionMedium, sdk.MediaResolutionHigh, sdk.MediaResolutionUltraHigh} {
		if !slices.Contains(google.MediaResolutions, string(v)) {
			t.Errorf("resolution %q not offered", v)
		}
	}
}
