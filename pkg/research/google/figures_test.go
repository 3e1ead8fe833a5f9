package google_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

func imageStep(mime, data string) string {
	return `{"type":"model_output","content":[{"type":"image","mime_type":"` + mime + `","data":"` + data + `"}]}`
}

func TestExtractFigures(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(fakeapi.FigurePNGs()[0])
	blue := base64.StdEncoding.EncodeToString(fakeapi.FigurePNGs()[1])
	old := imageStep("image/png", blue)
	body := `{"id":"a","status":"completed","steps":[` + old + `,{"type":"user_input","content":[{"type":"text","text":"q"}]},` +
		imageStep("image/png", png) + `,` + // kept
		imageStep("image/jpeg", png) + `,` + // declared jpeg, is png: dropped
		imageStep("image/png", "not base64!") + `,` + // dropped
		imageStep("image/tiff", png) + `,` + // not checkable by content: dropped
		`{"type":"thought","summary":[{"type":"image","mime_type":"image/png","data":"` + png + `"}]},` + // never read
		`{"type":"model_output","content":[{"type":"text","text":"report"},{"type":"image","mime_type":"image/png","data":"` + blue + `"}]}]}`
	it, err := google.ParseInteraction([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	f := google.ExtractFigures(it, google.FigureBounds{})
	if len(f.Figures) != 2 || f.Dropped != 3 || f.Truncated {
		t.Fatalf("%d figures, %d dropped, truncated %v", len(f.Figures), f.Dropped, f.Truncated)
	}
	if string(f.Figures[1].Data) != string(fakeapi.FigurePNGs()[1]) || f.Figures[0].Ext != "png" {
		t.Fatalf("order or bytes: %+v", f.Figures)
	}
	if rep := google.ExtractReport(it, google.Bounds{}); rep.Text != "report" {
		t.Fatalf("report %q", rep.Text)
	}
	// Bounds: count and per-figure bytes.
	if f := google.ExtractFigures(it, google.FigureBounds{MaxCount: 1}); len(f.Figures) != 1 || !f.Truncated {
		t.Fatalf("count bound: %+v", f)
	}
	if f := google.ExtractFigures(it, google.FigureBounds{MaxBytes: 10}); len(f.Figures) != 0 || f.Dropped != 5 {
		t.Fatalf("byte bound: %+v", f)
	}
	if f := google.ExtractFigures(it, google.FigureBounds{MaxTotal: int64(len(fakeapi.FigurePNGs()[0])) + 1}); len(f.Figures) != 1 || !f.Truncated {
		t.Fatalf("total bound: %+v", f)
	}
}

// FuzzExtractFigures: any interaction body gives figures within the
// bounds, each of a type its bytes are sniffed as, never a panic.
func FuzzExtractFigures(f *testing.F) {
	png := base64.StdEncoding.EncodeToString(fakeapi.FigurePNGs()[0])
	f.Add([]byte(`{"id":"a","status":"completed","steps":[` + imageStep("image/png", png) + `]}`))
	f.Add([]byte(`{"id":"a","status":"completed","steps":[` + imageStep("image/gif", "R0lGODlh") + `,` + imageStep("image/png", "") + `]}`))
	f.Add([]byte(`{"id":"a","steps":[{"type":"model_output","content":[{"type":"image","data":7}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		it, err := google.ParseInteraction(body)
		if err != nil {
			return
		}
		b := google.FigureBounds{MaxCount: 3, MaxBytes: 1 << 16, MaxTotal: 1 << 17}
		fs := google.ExtractFigures(it, b)
		var total int64
		if len(fs.Figures) > b.MaxCount {
			t.Fatalf("%d figures", len(fs.Figures))
		}
		for _, fig := range fs.Figures {
			total += int64(len(fig.Data))
			if int64(len(fig.Data)) > b.MaxBytes || http.DetectContentType(fig.Data) != fig.MimeType || fig.Ext == "" || strings.Contains(fig.Ext, "/") {
				t.Fatalf("figure %s %d bytes", fig.MimeType, len(fig.Data))
			}
		}
		if total > b.MaxTotal {
			t.Fatalf("total %d", total)
		}
	})
}
