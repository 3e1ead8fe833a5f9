// The result files of a finished job under <home>/research/<job>/
// (report.md, citations.json, result.json): their shapes, publishing them
// once the job ends, and reading them back. Copying the report to the
// caller's --out is deliver.go; deciding when a job is finished is
// observe.go.

package research

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// Published file names under <home>/research/<job>/.
const (
	ReportFile    = "report.md"
	CitationsFile = "citations.json"
	ResultFile    = "result.json"
)

func jobDir(home, id string) string { return filepath.Join(home, "research", id) }

// Result is result.json: what happened, without the report text.
type Result struct {
	Job                string          `json:"job"`
	Handle             string          `json:"handle"`
	Status             string          `json:"status"`
	State              string          `json:"state"`
	Partial            bool            `json:"partial"`
	Truncated          bool            `json:"truncated"`
	CitationsTruncated bool            `json:"citationsTruncated"`
	ReportBytes        int64           `json:"reportBytes"`
	Citations          int             `json:"citations"`
	DroppedCitations   int             `json:"droppedCitations"`
	Usage              json.RawMessage `json:"usage,omitempty"`
	Error              *ResultError    `json:"error,omitempty"`
	// ProviderErrors are the provider's own reasons, code and message as
	// sent (errors[] and model_output step errors).
	ProviderErrors  []google.ProviderError `json:"providerErrors,omitempty"`
	CreatedAt       string                 `json:"createdAt"`
	SubmittedAt     string                 `json:"submittedAt,omitempty"`
	FinishedAt      string                 `json:"finishedAt"`
	ProviderCreated string                 `json:"providerCreated,omitempty"`
	ProviderUpdated string                 `json:"providerUpdated,omitempty"`
	// ParentJob is the job a follow-up continues; PlanHandle the plan
	// interaction the report's turn confirmed.
	ParentJob  string `json:"parentJob,omitempty"`
	PlanHandle string `json:"planHandle,omitempty"`
	// Figures are the images saved under figures/ (with visualization
	// auto), in the order of the report's turn.
	Figures          []FigureFile `json:"figures,omitempty"`
	DroppedFigures   int          `json:"droppedFigures,omitempty"`
	FiguresTruncated bool         `json:"figuresTruncated,omitempty"`
}

// FigureFile is one saved figure.
type FigureFile struct {
	File     string `json:"file"` // relative to the job's folder: figures/01.png
	MimeType string `json:"mimeType"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256"`
}

// Figure bounds (docs/research.md, "Charts").
const (
	MaxFigures          = 16
	MaxFigureBytes      = 8 << 20
	MaxFigureTotalBytes = 24 << 20
	// FiguresDir is the figures' folder beside report.md.
	FiguresDir = "figures"
)

func mkdirJob(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Failed(CodePublishFailed, "cannot create %s: %v", dir, err)
	}
	return nil
}

// ResultError is the provider's error of a failed interaction.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CitationsDoc is citations.json.
type CitationsDoc struct {
	Citations []google.Citation `json:"citations"`
	Dropped   int               `json:"dropped"`
	Truncated bool              `json:"truncated"`
}

const maxUsageBytes = 64 << 10

// maxProviderErrors bounds the reasons kept in result.json.
const maxProviderErrors = 32

// publish writes report.md, citations.json and result.json, each
// atomically; result.json goes last, so its presence means the other two
// are the final ones.
func publish(home string, j *Job, rep *google.Report, it *google.Interaction, reasons []google.ProviderError) error {
	dir := jobDir(home, j.ID)
	if err := mkdirJob(dir); err != nil {
		return err
	}
	res := Result{
		Job: j.ID, Handle: j.Handle, Status: it.Status, State: j.State, Partial: j.Partial,
		Truncated: rep.Truncated, CitationsTruncated: rep.CitationsTruncated,
		ReportBytes: int64(len(rep.Text)), Citations: len(rep.Citations), DroppedCitations: rep.DroppedCitations,
		CreatedAt: stamp(j.CreatedAt), SubmittedAt: stamp(j.SubmittedAt), FinishedAt: stamp(j.FinishedAt),
		ProviderCreated: it.Created, ProviderUpdated: it.Updated,
		ParentJob: j.ParentJob, PlanHandle: j.PlanHandle,
	}
	if j.visualization() == VisualizationAuto {
		// Figures first: result.json, written last, lists exactly the
		// files a finished publication left.
		figs := google.ExtractFigures(it, google.FigureBounds{MaxCount: MaxFigures, MaxBytes: MaxFigureBytes, MaxTotal: MaxFigureTotalBytes})
		res.DroppedFigures, res.FiguresTruncated = figs.Dropped, figs.Truncated
		if len(figs.Figures) > 0 {
			if err := mkdirJob(filepath.Join(dir, FiguresDir)); err != nil {
				return err
			}
		}
		for i, f := range figs.Figures {
			rel := filepath.Join(FiguresDir, fmt.Sprintf("%02d.%s", i+1, f.Ext))
			if err := fsx.WriteFile(filepath.Join(dir, rel), f.Data, 0o600); err != nil {
				return errs.Failed(CodePublishFailed, "cannot publish %s: %v", filepath.Join(dir, rel), err)
			}
			sum := sha256.Sum256(f.Data)
			res.Figures = append(res.Figures, FigureFile{File: filepath.ToSlash(rel), MimeType: f.MimeType, Bytes: int64(len(f.Data)), SHA256: hex.EncodeToString(sum[:])})
		}
	}
	if len(it.Usage) > 0 && len(it.Usage) <= maxUsageBytes && json.Valid(it.Usage) {
		res.Usage = it.Usage
	}
	if j.ErrorCode != "" {
		res.Error = &ResultError{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	for _, r := range reasons {
		if len(res.ProviderErrors) == maxProviderErrors {
			break
		}
		res.ProviderErrors = append(res.ProviderErrors, google.ProviderError{Code: truncate(r.Code, 512), Message: truncate(r.Message, 4096)})
	}
	cit, _ := json.MarshalIndent(CitationsDoc{Citations: rep.Citations, Dropped: rep.DroppedCitations, Truncated: rep.CitationsTruncated}, "", "  ")
	resb, _ := json.MarshalIndent(res, "", "  ")
	for _, f := range []struct {
		name string
		data []byte
	}{{ReportFile, []byte(rep.Text)}, {CitationsFile, append(cit, '\n')}, {ResultFile, append(resb, '\n')}} {
		if err := fsx.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return errs.Failed(CodePublishFailed, "cannot publish %s: %v", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

func stamp(msec int64) string {
	if msec == 0 {
		return ""
	}
	return fromMs(msec).Format("2006-01-02T15:04:05.000Z07:00")
}

// ReadReport returns the published report and citations of a job (for
// RPC answers).
func ReadReport(home, id string) (string, []google.Citation, error) {
	dir := jobDir(home, id)
	rep, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		return "", nil, err
	}
	var cd CitationsDoc
	if b, err := os.ReadFile(filepath.Join(dir, CitationsFile)); err == nil {
		_ = json.Unmarshal(b, &cd)
	}
	return string(rep), cd.Citations, nil
}
