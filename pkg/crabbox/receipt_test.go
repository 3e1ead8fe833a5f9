package crabbox_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
	"github.com/clawkit/clawkit/pkg/errs"
)

func sampleReceipt(t testing.TB) (*crabbox.Receipt, *crabbox.Inputs, string) {
	dir := t.TempDir()
	mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), crabboxtest.NodeBootstrap(crabboxtest.Version))
	if err != nil {
		t.Fatal(err)
	}
	in, err := crabbox.LoadInputs(mp, crabbox.Expect{})
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	l, _ := crabbox.LayoutFor(home, in.Manifest)
	return crabbox.NewReceipt(crabbox.StatusInstalled, in, l, "clawkit test"), in, home
}

func TestReadReceipt(t *testing.T) {
	rc, in, home := sampleReceipt(t)
	line := rc.Line()
	long := strings.Repeat("x", 200_000) // other lines may be long
	decoded, _ := json.Marshal(rc)
	indented, _ := json.MarshalIndent(rc, "", "  ")
	cases := []struct {
		name, input string
		code        errs.Code
	}{
		{"only", line + "\n", ""},
		{"no-newline", line, ""},
		{"crlf", line + "\r\n", ""},
		{"among-noise", "a\n" + long + "\n" + line + "\nz\n", ""},
		{"zero", "a\nb\n", "receipt_missing"},
		{"empty", "", "receipt_missing"},
		{"indented-is-not-a-receipt", "  " + line + "\n", "receipt_missing"},
		{"two", line + "\n" + line + "\n", "receipt_duplicate"},
		{"oversized", crabbox.ReceiptMarker + " " + strings.Repeat(" ", crabbox.MaxReceiptLine) + "{}\n", "receipt_oversized"},
		{"bad-json", crabbox.ReceiptMarker + " {\"status\":\n", "receipt_invalid"},
		{"trailing", line + " {}\n", "receipt_invalid"},
		{"unknown-field", strings.Replace(line, `{"status"`, `{"extra":1,"status"`, 1) + "\n", "receipt_invalid"},
		{"wrong-type", strings.Replace(line, `"status":"installed"`, `"status":1`, 1) + "\n", "receipt_invalid"},
		// An already-decoded receipt: the JSON object alone.
		{"decoded", string(decoded), ""},
		{"decoded-indented", "\n  " + string(indented) + "\n\n", ""},
		{"decoded-trailing", string(decoded) + "\n{}\n", "receipt_invalid"},
		// The marker line wherever it is: after a JSON log line too
		// (issue 31, item 12), and the JSON before it is not read as a
		// receipt.
		{"decoded-then-line", string(decoded) + "\n" + line + "\n", ""},
		{"json-log-then-line", `{"level":"info","msg":"installing"}` + "\n" + line + "\n", ""},
		{"json-log-around-line", `{"level":"info"}` + "\n" + line + "\n" + `{"level":"info","msg":"done"}` + "\n", ""},
		{"json-log-only", `{"level":"info","msg":"installing"}` + "\n", "receipt_invalid"},
		{"json-log-then-two-lines", `{"level":"info"}` + "\n" + line + "\n" + line + "\n", "receipt_duplicate"},
		{"decoded-then-noise", string(decoded) + "\nnoise\n", "receipt_invalid"},
		{"decoded-unknown-field", strings.Replace(string(decoded), `{"status"`, `{"extra":1,"status"`, 1), "receipt_invalid"},
		{"decoded-oversized", "{" + strings.Repeat(" ", crabbox.MaxReceiptLine) + "}", "receipt_oversized"},
		{"decoded-array", "[" + string(decoded) + "]", "receipt_missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := crabbox.ReadReceipt(strings.NewReader(c.input))
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := crabbox.ValidateReceipt(got, in.Manifest, in.ManifestSHA256, home); err != nil {
					t.Fatal(err)
				}
				return
			}
			if errs.CodeOf(err) != c.code || errs.KindOf(err) != errs.KindFailed {
				t.Fatalf("got %v (%s), want %s", err, errs.CodeOf(err), c.code)
			}
		})
	}
	// Byte-at-a-time readers change nothing.
	if _, err := crabbox.ReadReceipt(iotest.OneByteReader(strings.NewReader("x\n" + line + "\n"))); err != nil {
		t.Fatal(err)
	}
}

func TestReceiptLineLimitExact(t *testing.T) {
	// A line of exactly MaxReceiptLine bytes (marker included) passes the
	// size check; one more byte does not.
	rc, _, _ := sampleReceipt(t)
	base := rc.Line()
	pad := crabbox.MaxReceiptLine - len(base)
	exact := crabbox.ReceiptMarker + strings.Repeat(" ", pad+1) + strings.TrimPrefix(base, crabbox.ReceiptMarker+" ")
	if len(exact) != crabbox.MaxReceiptLine {
		t.Fatal(len(exact))
	}
	if _, err := crabbox.ReadReceipt(strings.NewReader(exact + "\n")); err != nil {
		t.Fatalf("exact limit refused: %v", err)
	}
	if _, err := crabbox.ReadReceipt(strings.NewReader(" " + exact[:len(crabbox.ReceiptMarker)] + " " + exact[len(crabbox.ReceiptMarker):] + "\n")); errs.CodeOf(err) != "receipt_missing" {
		t.Fatalf("err = %v", err)
	}
	over := crabbox.ReceiptMarker + " " + exact[len(crabbox.ReceiptMarker):]
	if _, err := crabbox.ReadReceipt(strings.NewReader(over + "\n")); errs.CodeOf(err) != "receipt_oversized" {
		t.Fatalf("limit+1: %v", err)
	}
}

func TestValidateReceipt(t *testing.T) {
	rc, in, home := sampleReceipt(t)
	m, sha := in.Manifest, in.ManifestSHA256
	mut := func(f func(r *crabbox.Receipt)) *crabbox.Receipt {
		c := *rc
		f(&c)
		return &c
	}
	cases := []struct {
		name string
		r    *crabbox.Receipt
		code errs.Code
	}{
		{"status", mut(func(r *crabbox.Receipt) { r.Status = "skipped" }), "receipt_status"},
		{"version", mut(func(r *crabbox.Receipt) { r.PackageVersion = "1.0.0" }), "receipt_mismatch"},
		{"build", mut(func(r *crabbox.Receipt) { r.BuildID = "other" }), "receipt_mismatch"},
		{"manifest", mut(func(r *crabbox.Receipt) { r.ManifestSHA256 = strings.Repeat("0", 64) }), "receipt_mismatch"},
		{"node", mut(func(r *crabbox.Receipt) { r.NodeBootstrapSHA256 = strings.Repeat("1", 64) }), "receipt_mismatch"},
		{"worker", mut(func(r *crabbox.Receipt) { r.WorkerBundleSHA256 = strings.Repeat("2", 64) }), "receipt_mismatch"},
		{"bundle", mut(func(r *crabbox.Receipt) { r.BundleHash = strings.Repeat("3", 64) }), "receipt_mismatch"},
		{"cli", mut(func(r *crabbox.Receipt) { r.CLIVersion = "" }), "receipt_mismatch"},
		{"path", mut(func(r *crabbox.Receipt) { r.WorkerArchive = "/tmp/x.tgz" }), "receipt_mismatch"},
		{"runtime-rel", mut(func(r *crabbox.Receipt) { r.RuntimeDir = "rel/dir" }), "receipt_mismatch"},
		{"nil", nil, "receipt_missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := crabbox.ValidateReceipt(c.r, m, sha, home)
			if errs.CodeOf(err) != c.code {
				t.Fatalf("got %v, want %s", err, c.code)
			}
		})
	}
	if err := crabbox.ValidateReceipt(mut(func(r *crabbox.Receipt) { r.Status = crabbox.StatusExistingVerified }), m, sha, home); err != nil {
		t.Fatal(err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestReadReceiptReadError(t *testing.T) {
	if _, err := crabbox.ReadReceipt(io.MultiReader(strings.NewReader("x\n"), errReader{})); errs.CodeOf(err) != "receipt_unreadable" {
		t.Fatalf("err = %v", err)
	}
}

// FuzzReceipt: ReadReceipt never panics, never accepts two marker lines or
// an oversized one, and whatever it accepts re-encodes to a line that parses
// back to the same receipt.
func FuzzReceipt(f *testing.F) {
	rc, in, home := sampleReceipt(f)
	line := rc.Line()
	f.Add(line + "\n")
	f.Add("noise\n" + line)
	f.Add(line + "\n" + line + "\n")
	f.Add(crabbox.ReceiptMarker + " {}\n")
	f.Add(crabbox.ReceiptMarker + "\r\n")
	f.Add(crabbox.ReceiptMarker + ` {"status":"installed"} x`)
	decoded, _ := json.Marshal(rc)
	f.Add(string(decoded))
	f.Add(" \n" + string(decoded) + "\n" + line + "\n")
	f.Add(`{"level":"info","msg":"x"}` + "\n" + line + "\n")
	f.Add(`{"level":"info"}` + "\n" + line + "\n" + `{}` + "\n")
	f.Fuzz(func(t *testing.T, input string) {
		got, err := crabbox.ReadReceipt(strings.NewReader(input))
		markers := 0
		for l := range strings.SplitSeq(input, "\n") {
			if strings.HasPrefix(l, crabbox.ReceiptMarker) {
				markers++
				if err == nil && len(strings.TrimSuffix(l, "\r")) > crabbox.MaxReceiptLine {
					t.Fatalf("accepted an oversized line")
				}
			}
		}
		if err != nil {
			if errs.KindOf(err) != errs.KindFailed {
				t.Fatalf("kind %v", errs.KindOf(err))
			}
			return
		}
		switch {
		case markers == 1:
			// The one marker line, wherever it is, is the receipt.
			var line string
			for l := range strings.SplitSeq(input, "\n") {
				if strings.HasPrefix(l, crabbox.ReceiptMarker) {
					line = strings.TrimSuffix(l, "\r")
				}
			}
			want, perr := crabbox.ParseReceiptLine(line)
			if perr != nil || *want != *got {
				t.Fatalf("accepted %+v, but the marker line says %+v (%v)", got, want, perr)
			}
		case markers == 0:
			// An already-decoded receipt: the whole input one object,
			// bounded.
			if trimmed := strings.TrimLeft(input, " \t\r\n"); !strings.HasPrefix(trimmed, "{") || len(input) > crabbox.MaxReceiptLine {
				t.Fatalf("accepted %d bytes without a marker line", len(input))
			}
			if !json.Valid([]byte(input)) {
				t.Fatalf("accepted an input that is not one JSON document as a decoded receipt")
			}
		default:
			t.Fatalf("accepted with %d marker lines", markers)
		}
		back, err := crabbox.ParseReceiptLine(got.Line())
		if err != nil && len(got.Line()) <= crabbox.MaxReceiptLine {
			t.Fatalf("re-encoded receipt does not parse: %v", err)
		}
		if err == nil {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(back)
			if string(a) != string(b) {
				t.Fatalf("round trip changed the receipt")
			}
		}
		_ = crabbox.ValidateReceipt(got, in.Manifest, in.ManifestSHA256, home)
	})
}

// Duplicate keys (last would win) and invalid UTF-8 (would become U+FFFD)
// are refused, not decoded.
func TestParseReceiptLineStrict(t *testing.T) {
	rc, _, _ := sampleReceipt(t)
	line := rc.Line()
	if _, err := crabbox.ParseReceiptLine(line); err != nil {
		t.Fatal(err)
	}
	dup := strings.Replace(line, `"status":"installed",`, `"status":"installed","status":"existing-verified",`, 1)
	if dup == line {
		t.Fatal("fixture changed")
	}
	if _, err := crabbox.ParseReceiptLine(dup); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate key: %v", err)
	}
	bad := strings.Replace(line, `"packageName":"openclaw"`, "\"packageName\":\"open\xffclaw\"", 1)
	if bad == line {
		t.Fatal("fixture changed")
	}
	if _, err := crabbox.ParseReceiptLine(bad); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

// TestVerifyReportDocumented: every field of verify --json's document is
// in docs/crabbox.md's table, so the documented shape cannot drift.
func TestVerifyReportDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "crabbox.md"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(crabbox.VerifyReport{FirstDifference: &crabbox.Problem{}, Receipt: &crabbox.Receipt{}, Code: "x", Message: "x", Hint: "x", RuntimeDir: "x"})
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "### `verify --json`")
	table, _, _ = strings.Cut(table, "A cache whose")
	for f := range fields {
		if !strings.Contains(table, "`"+f+"`") {
			t.Errorf("field %q is not in docs/crabbox.md's verify --json table", f)
		}
	}
}
