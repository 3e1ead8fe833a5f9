package crabbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
)

const (
	// ReceiptMarker starts the one receipt line install and verify print.
	ReceiptMarker = "openclaw.runtime-installed:"
	// MaxReceiptLine bounds a receipt line, marker included, newline not.
	MaxReceiptLine = 16384

	StatusInstalled        = "installed"
	StatusExistingVerified = "existing-verified"
)

// Receipt is the JSON of the receipt line. It is evidence that a check
// completed, not permission to skip future verification.
type Receipt struct {
	Status              string `json:"status"`
	PackageName         string `json:"packageName"`
	PackageVersion      string `json:"packageVersion"`
	BuildID             string `json:"buildId"`
	Platform            string `json:"platform"`
	Arch                string `json:"arch"`
	ManifestSHA256      string `json:"manifestSha256"`
	NodeBootstrapSHA256 string `json:"nodeBootstrapSha256"`
	WorkerBundleSHA256  string `json:"workerBundleSha256"`
	BundleHash          string `json:"bundleHash"`
	CLIVersion          string `json:"cliVersion"`
	RuntimeDir          string `json:"runtimeDir"`
	PackageDir          string `json:"packageDir"`
	WorkerArchive       string `json:"workerArchive"`
}

// NewReceipt builds the receipt for an install or verification of in at l.
func NewReceipt(status string, in *Inputs, l Layout, cliVersion string) *Receipt {
	m := in.Manifest
	return &Receipt{
		Status:              status,
		PackageName:         m.Package.Name,
		PackageVersion:      m.Package.Version,
		BuildID:             m.BuildID,
		Platform:            m.Platform,
		Arch:                m.Arch,
		ManifestSHA256:      in.ManifestSHA256,
		NodeBootstrapSHA256: m.NodeBootstrap.SHA256,
		WorkerBundleSHA256:  m.WorkerBundle.SHA256,
		BundleHash:          m.WorkerBundle.BundleHash,
		CLIVersion:          cliVersion,
		RuntimeDir:          l.RuntimeDir,
		PackageDir:          l.PackageDir,
		WorkerArchive:       l.WorkerArchive,
	}
}

// Line renders the receipt line (without a newline).
func (r *Receipt) Line() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r)
	return ReceiptMarker + " " + strings.TrimSuffix(b.String(), "\n")
}

func receiptErr(code errs.Code, format string, args ...any) *errs.Error {
	return errs.Failed(code, format, args...).
		WithHint("pass the standard output of 'clawkit crabbox install' or 'clawkit crabbox verify' for this manifest; run verify again rather than trusting an old receipt")
}

// ReadReceipt scans a command's output for the receipt line. Exactly one
// line may start with ReceiptMarker, wherever it is among the other lines
// (log lines, JSON or not, may come before and after it), and it may be at
// most MaxReceiptLine bytes (a trailing CR is ignored). Memory stays
// bounded however long the other lines are. The JSON is decoded strictly
// (unknown fields, trailing data and a wrong type are errors) but not
// checked against a manifest: that is ValidateReceipt.
//
// An input with no marker line may be an already-decoded receipt: the
// whole input one JSON object (what `--json` prints, indented or not), at
// most MaxReceiptLine bytes with nothing but white space around it. It is
// decoded just as strictly; an input that starts with "{" but is not one
// object as a whole is refused (receipt_invalid), not searched further.
func ReadReceipt(r io.Reader) (*Receipt, error) {
	// The input's first MaxReceiptLine+1 bytes are kept for the decoded
	// form; the scan reads through them.
	head := &prefixBuffer{max: MaxReceiptLine + 1}
	br := bufio.NewReaderSize(io.TeeReader(r, head), 64<<10)
	var found []byte
	count := 0
	lineNo := 0
	for {
		line, tooLong, err := readBoundedLine(br, MaxReceiptLine)
		if len(line) == 0 && !tooLong && err == io.EOF {
			break
		}
		lineNo++
		if err != nil && err != io.EOF {
			return nil, receiptErr(errs.CodeReceiptUnreadable, "cannot read the command output: %v", err)
		}
		if bytes.HasPrefix(line, []byte(ReceiptMarker)) {
			count++
			if tooLong {
				return nil, receiptErr(CodeReceiptOversized, "receipt line %d is longer than %d bytes", lineNo, MaxReceiptLine)
			}
			if count > 1 {
				return nil, receiptErr(CodeReceiptDuplicate, "more than one %s line (line %d is another one)", ReceiptMarker, lineNo)
			}
			found = append([]byte(nil), line...)
		}
		if err == io.EOF {
			break
		}
	}
	if count == 1 {
		return ParseReceiptLine(string(found))
	}
	if trimmed := bytes.TrimLeft(head.b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		if head.n > MaxReceiptLine {
			return nil, receiptErr(CodeReceiptOversized, "receipt JSON is longer than %d bytes", MaxReceiptLine)
		}
		return decodeReceipt(head.b)
	}
	return nil, receiptErr(CodeReceiptMissing, "no %s line in the command output", ReceiptMarker)
}

// prefixBuffer keeps the first max bytes written to it and counts them all.
type prefixBuffer struct {
	b   []byte
	n   int64
	max int
}

func (p *prefixBuffer) Write(b []byte) (int, error) {
	if room := p.max - len(p.b); room > 0 {
		p.b = append(p.b, b[:min(room, len(b))]...)
	}
	p.n += int64(len(b))
	return len(b), nil
}

// readBoundedLine reads one LF-terminated line, returning at most max bytes
// of it (without the LF and a trailing CR); tooLong reports that the line
// was longer, in which case the rest of it was consumed and discarded.
func readBoundedLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= max+2 { // room for "\r\n"
			buf = append(buf, chunk...)
		} else {
			tooLong = true
			if len(buf) < max+2 {
				buf = append(buf, chunk[:max+2-len(buf)]...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		if !tooLong {
			buf = bytes.TrimSuffix(buf, []byte("\r"))
		}
		if len(buf) > max {
			tooLong = true
			buf = buf[:max]
		}
		return buf, tooLong, err
	}
}

// ParseReceiptLine decodes one receipt line (marker included).
func ParseReceiptLine(line string) (*Receipt, error) {
	if len(line) > MaxReceiptLine {
		return nil, receiptErr(CodeReceiptOversized, "receipt line is %d bytes, over the limit of %d", len(line), MaxReceiptLine)
	}
	rest, ok := strings.CutPrefix(line, ReceiptMarker)
	if !ok {
		return nil, receiptErr(CodeReceiptInvalid, "line does not start with %s", ReceiptMarker)
	}
	return decodeReceipt([]byte(rest))
}

// decodeReceipt strictly decodes one receipt JSON object (white space
// around it allowed).
func decodeReceipt(rest []byte) (*Receipt, error) {
	if err := artifacts.CheckStrictJSON(rest); err != nil {
		return nil, receiptErr(CodeReceiptInvalid, "receipt JSON is invalid: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	var rc Receipt
	if err := dec.Decode(&rc); err != nil {
		return nil, receiptErr(CodeReceiptInvalid, "receipt JSON is invalid: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, receiptErr(CodeReceiptInvalid, "receipt has data after its JSON object")
	}
	return &rc, nil
}

// ValidateReceipt checks an already-decoded receipt against the expected
// manifest (and, when targetHome is not empty, the expected install
// location). It is the library form of `clawkit crabbox receipt`: status
// known, every identity field equal, paths consistent with the layout.
func ValidateReceipt(rc *Receipt, m *artifacts.Manifest, manifestSHA256, targetHome string) error {
	if rc == nil {
		return receiptErr(CodeReceiptMissing, "no receipt")
	}
	switch rc.Status {
	case StatusInstalled, StatusExistingVerified:
	default:
		return receiptErr(CodeReceiptStatus, "receipt status %q is not %q or %q", rc.Status, StatusInstalled, StatusExistingVerified)
	}
	var bad []string
	cmp := func(what, got, want string) {
		if got != want {
			bad = append(bad, fmt.Sprintf("%s is %q, expected %q", what, got, want))
		}
	}
	cmp("packageName", rc.PackageName, m.Package.Name)
	cmp("packageVersion", rc.PackageVersion, m.Package.Version)
	cmp("buildId", rc.BuildID, m.BuildID)
	cmp("platform", rc.Platform, m.Platform)
	cmp("arch", rc.Arch, m.Arch)
	cmp("manifestSha256", rc.ManifestSHA256, manifestSHA256)
	cmp("nodeBootstrapSha256", rc.NodeBootstrapSHA256, m.NodeBootstrap.SHA256)
	cmp("workerBundleSha256", rc.WorkerBundleSHA256, m.WorkerBundle.SHA256)
	cmp("bundleHash", rc.BundleHash, m.WorkerBundle.BundleHash)
	if rc.CLIVersion == "" {
		bad = append(bad, "cliVersion is empty")
	}
	// The paths must be the layout of this manifest (below some home, or
	// below the given one).
	if !filepath.IsAbs(rc.RuntimeDir) || filepath.Clean(rc.RuntimeDir) != rc.RuntimeDir {
		bad = append(bad, fmt.Sprintf("runtimeDir %q is not a clean absolute path", rc.RuntimeDir))
	} else {
		home := targetHome
		if home == "" {
			// Derive the home from the receipt and check the rest is
			// the layout below it.
			suffix := string(filepath.Separator) + filepath.Join(filepath.FromSlash(RuntimesDir), m.NodeBootstrap.SHA256)
			if !strings.HasSuffix(rc.RuntimeDir, suffix) {
				bad = append(bad, fmt.Sprintf("runtimeDir %q does not end in %s", rc.RuntimeDir, suffix))
			}
			home = strings.TrimSuffix(rc.RuntimeDir, suffix)
			if home == "" {
				home = string(filepath.Separator)
			}
		}
		if l, err := LayoutFor(home, m); err == nil {
			cmp("runtimeDir", rc.RuntimeDir, l.RuntimeDir)
			cmp("packageDir", rc.PackageDir, l.PackageDir)
			cmp("workerArchive", rc.WorkerArchive, l.WorkerArchive)
		}
	}
	if len(bad) > 0 {
		return receiptErr(CodeReceiptMismatch, "receipt does not match the expected install: %s", strings.Join(bad, "; "))
	}
	return nil
}
