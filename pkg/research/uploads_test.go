package research

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// bigPDF writes a PDF over the inline limit (so it is uploaded) named name.
func bigPDF(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	data := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 5<<20)...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file still PROCESSING past FileProcessingWait leaves the job
// uploading (input_not_ready, exit 5) with the file recorded by name and
// no uri, and no create sent; the same start with the same idempotency
// key awaits the same file again (no second upload) and, once it is
// ACTIVE, creates.
func TestProcessingFileAwaitedWithinBound(t *testing.T) {
	f := newFixture(t)
	f.svc.Budgets.FileProcessingWait = time.Nanosecond
	ctx := context.Background()
	p := StartParams{Question: "q", IdempotencyKey: "k-processing", Inputs: checked(t, bigPDF(t, "big-fake-processing.pdf"))}
	_, err := f.startChecked(ctx, f.env(), p)
	wantCode(t, err, errs.KindUnavailable, CodeInputNotReady)
	if n := f.fake.Count("POST /interactions"); n != 0 {
		t.Fatalf("%d creates while the file is processing", n)
	}
	jobs, err := jobsOf(f.env()).list(ctx, `WHERE 1=1`)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%v %d", err, len(jobs))
	}
	j := jobs[0]
	if rec := j.Options.Inputs[0]; j.State != StateSubmitting || !j.uploading() || rec.File == "" || rec.URI != "" {
		t.Fatalf("%+v %+v", j, rec)
	}
	res, err := f.startChecked(ctx, f.env(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Job != j.ID {
		t.Fatalf("job %s, want %s", res.Job, j.ID)
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("%d creates", n)
	}
	if up, _ := f.fake.Files(); up != 1 {
		t.Fatalf("%d uploads, want 1", up)
	}
	if rec := f.job(j.ID).Options.Inputs[0]; rec.URI == "" {
		t.Fatalf("%+v", rec)
	}
}

// A chunk that keeps failing temporarily is tried maxChunkRetries more
// times, each after a query of the session, then the start ends with
// upload_failed as a temporary failure: the job is left uploading, to be
// resumed by the same start with the same idempotency key; no create.
func TestChunkRetriesBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var chunks, queries int
	f.svc.HTTP = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Header.Get("X-Goog-Upload-Command") {
		case "upload", "upload, finalize":
			chunks++
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"error":{"code":503,"message":"unavailable","status":"UNAVAILABLE"}}`)), Request: r}, nil
		case "query":
			queries++
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	p := StartParams{Question: "q", IdempotencyKey: "k-chunks", Inputs: checked(t, bigPDF(t, "big.pdf"))}
	_, err := f.startChecked(ctx, f.env(), p)
	wantCode(t, err, errs.KindFailed, CodeUploadFailed)
	if ge := uploadCause(err); ge == nil || !ge.Temporary {
		t.Fatalf("not a temporary failure: %v", err)
	}
	if chunks != 1+maxChunkRetries || queries != maxChunkRetries {
		t.Fatalf("%d chunk requests, %d queries", chunks, queries)
	}
	jobs, err := jobsOf(f.env()).list(ctx, `WHERE 1=1`)
	if err != nil || len(jobs) != 1 || jobs[0].State != StateSubmitting || !jobs[0].uploading() {
		t.Fatalf("%v %+v", err, jobs)
	}
	if n := f.fake.Count("POST /interactions"); n != 0 {
		t.Fatalf("%d creates", n)
	}
}
