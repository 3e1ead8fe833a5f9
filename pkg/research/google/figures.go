package google

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// Figure is one image output of an interaction's final turn, decoded.
type Figure struct {
	MimeType string
	Ext      string // file extension without the dot
	Data     []byte
}

// FigureBounds limit what ExtractFigures keeps.
type FigureBounds struct {
	MaxCount int
	MaxBytes int64 // per figure, decoded
	MaxTotal int64 // all figures, decoded
}

// Figures is the image outputs of an interaction.
type Figures struct {
	Figures []Figure
	// Dropped counts image blocks that were not kept: no inline data,
	// not base64, a type other than the sniffed one, a type that cannot
	// be checked by content, or over a per-figure bound.
	Dropped int
	// Truncated is set when the count or total bound cut the list.
	Truncated bool
}

// figureExts are the image types a figure may have: the SDKs' image MIME
// types whose content the standard library's sniffer recognises, so the
// declared type is checked against the bytes (the others are dropped).
var figureExts = map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}

// ExtractFigures returns the image blocks of the final turn's model
// outputs (the steps after the last user_input, the turn the SDKs take
// output_image from), in timeline order, decoded and bounded. Thought
// summaries and tool results are never read. The report text is not
// touched: it stays exactly output_text (ExtractReport).
func ExtractFigures(it *Interaction, b FigureBounds) Figures {
	var out Figures
	start := 0
	for i := len(it.Steps) - 1; i >= 0; i-- {
		if it.Steps[i].Type == "user_input" {
			start = i + 1
			break
		}
	}
	var total int64
	for _, st := range it.Steps[start:] {
		if st.Type != "model_output" {
			continue
		}
		for _, c := range st.Content {
			if c.Type != "image" {
				continue
			}
			ext, ok := figureExts[c.MimeType]
			if !ok || c.Data == "" {
				out.Dropped++
				continue
			}
			if b.MaxBytes > 0 && int64(base64.StdEncoding.DecodedLen(len(c.Data))) > b.MaxBytes+3 {
				out.Dropped++
				continue
			}
			data, err := base64.StdEncoding.DecodeString(strings.TrimRight(c.Data, "\n"))
			if err != nil {
				data, err = base64.RawStdEncoding.DecodeString(c.Data)
			}
			if err != nil || len(data) == 0 || (b.MaxBytes > 0 && int64(len(data)) > b.MaxBytes) {
				out.Dropped++
				continue
			}
			if http.DetectContentType(data) != c.MimeType {
				out.Dropped++
				continue
			}
			if (b.MaxCount > 0 && len(out.Figures) >= b.MaxCount) || (b.MaxTotal > 0 && total+int64(len(data)) > b.MaxTotal) {
				out.Truncated = true
				continue
			}
			total += int64(len(data))
			out.Figures = append(out.Figures, Figure{MimeType: c.MimeType, Ext: ext, Data: data})
		}
	}
	return out
}

// PlanText is a plan turn's plan: exactly the SDKs' output_text of the
// interaction (Google's clients have no other plan field; a collaborative
// planning turn answers with the plan as its model output), cut at a
// character boundary at max bytes when max > 0.
func PlanText(it *Interaction, max int64) string {
	return ExtractReport(it, Bounds{MaxReportBytes: max}).Text
}
