package google

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func i64(v int64) *int64 { return &v }

func TestExtractReportFinalModelOutputOnly(t *testing.T) {
	it := &Interaction{ID: "x", Status: StatusCompleted, Steps: []Step{
		{Type: "user_input", Content: []Content{{Type: "text", Text: "question"}}},
		{Type: "model_output", Content: []Content{{Type: "text", Text: "interim"}}},
		{Type: "thought", Content: []Content{{Type: "text", Text: "thinking"}}},
		{Type: "google_search_call"},
		{Type: "model_output", Content: []Content{{Type: "text", Text: "Part one. "}, {Type: "image"}, {Type: "text", Text: "Part two."}}},
		{Type: "model_output", Content: []Content{{Type: "text", Text: "Tail", Annotations: []Annotation{{Type: "url_citation", URL: "https://a.example/", StartIndex: i64(0), EndIndex: i64(4)}}}}},
	}}
	rep := ExtractReport(it, Bounds{})
	// The SDKs' output_text: the trailing model outputs, thought steps
	// skipped, a non-text block ending the walk, parts joined as they are.
	want := "Part two.Tail"
	if rep.Text != want {
		t.Fatalf("report %q, want %q", rep.Text, want)
	}
	if len(rep.Citations) != 1 || !rep.Citations[0].HasSpan() || *rep.Citations[0].StartByte != int64(len(want)-4) || *rep.Citations[0].EndByte != int64(len(want)) {
		t.Fatalf("citations %+v", rep.Citations)
	}
}

func TestExtractReportMultibyteCitations(t *testing.T) {
	b0 := "Über 東京 🚀."
	b1 := "naïve café"
	tokyo := int64(strings.Index(b0, "東京"))
	cafe := int64(strings.Index(b1, "café"))
	it := &Interaction{ID: "x", Status: StatusCompleted, Steps: []Step{{Type: "model_output", Content: []Content{
		{Type: "text", Text: b0, Annotations: []Annotation{
			{Type: "url_citation", URL: "https://t.example/", Title: "T", StartIndex: i64(tokyo), EndIndex: i64(tokyo + 6)},
			{Type: "url_citation", URL: "https://bad.example/", StartIndex: i64(tokyo + 1), EndIndex: i64(tokyo + 6)}, // mid rune
			{Type: "url_citation", URL: "https://bad.example/", StartIndex: i64(0), EndIndex: i64(999)},               // out of range
			{Type: "url_citation", URL: "ftp://bad.example/", StartIndex: i64(0), EndIndex: i64(2)},                   // scheme
			{Type: "url_citation", URL: "https://bad.example/", StartIndex: i64(4), EndIndex: i64(4)},                 // empty
			{Type: "url_citation", URL: "https://bad.example/", StartIndex: nil, EndIndex: i64(4)},                    // half missing
			{Type: "file_citation", URL: "https://ignored.example/", StartIndex: i64(0), EndIndex: i64(2)},            // other type: ignored
		}},
		{Type: "text", Text: b1, Annotations: []Annotation{{Type: "url_citation", URL: "https://c.example/", StartIndex: i64(cafe), EndIndex: i64(cafe + int64(len("café")))}}},
	}}}}
	rep := ExtractReport(it, Bounds{})
	if rep.Text != b0+b1 {
		t.Fatalf("report %q", rep.Text)
	}
	if rep.DroppedCitations != 5 || len(rep.Citations) != 2 {
		t.Fatalf("dropped %d, citations %+v", rep.DroppedCitations, rep.Citations)
	}
	for _, c := range rep.Citations {
		got := rep.Text[*c.StartByte:*c.EndByte]
		if got != "東京" && got != "café" {
			t.Fatalf("citation %+v covers %q", c, got)
		}
	}
	if rep.Text[*rep.Citations[1].StartByte:*rep.Citations[1].EndByte] != "café" {
		t.Fatal("second block citation not re-based")
	}
}

func TestExtractReportTruncation(t *testing.T) {
	text := strings.Repeat("é", 10) // 20 bytes
	it := &Interaction{ID: "x", Status: StatusCompleted, Steps: []Step{{Type: "model_output", Content: []Content{{Type: "text", Text: text, Annotations: []Annotation{
		{Type: "url_citation", URL: "https://a.example/", StartIndex: i64(0), EndIndex: i64(2)},
		{Type: "url_citation", URL: "https://b.example/", StartIndex: i64(2), EndIndex: i64(4)},
		{Type: "url_citation", URL: "https://c.example/", StartIndex: i64(10), EndIndex: i64(20)},
	}}}}}}
	rep := ExtractReport(it, Bounds{MaxReportBytes: 9, MaxCitations: 1})
	if rep.Text != strings.Repeat("é", 4) || !rep.Truncated {
		t.Fatalf("truncated report %q %v", rep.Text, rep.Truncated)
	}
	if len(rep.Citations) != 1 || !rep.CitationsTruncated || rep.DroppedCitations != 1 {
		t.Fatalf("%+v", rep)
	}
}

// The legacy outputs[] shape is not mapped by the SDKs for agent
// interactions: it gives no output text.
func TestLegacyOutputsAreNotText(t *testing.T) {
	body := `{"id":"v1_a","status":"completed","outputs":[{"type":"thought","summary":"no"},{"type":"text","text":"Legacy report"}]}`
	it, err := ParseInteraction([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if rep := ExtractReport(it, Bounds{}); rep.Text != "" {
		t.Fatalf("%+v %q", rep, rep.Text)
	}
}

func TestParseInteractionRejects(t *testing.T) {
	for _, body := range []string{
		`{"id":"","status":"completed"}`,
		`{"id":"../x","status":"completed"}`,
		`{"id":"a?b","status":"completed"}`,
		`{"id":"a","status":"completed"} x`,
		`not json`,
		`{"id":"a","status":"comp`,
		``,
		`[]`,
		`{"id":7,"status":"completed"}`,
	} {
		if _, err := ParseInteraction([]byte(body)); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

// FuzzParseInteraction: parsing provider bytes never panics, and every
// citation of an extracted report lies inside the (bounded) report on rune
// boundaries.
func FuzzParseInteraction(f *testing.F) {
	f.Add([]byte(`{"id":"v1_a","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"Über 東京","annotations":[{"type":"url_citation","url":"https://x.example","start_index":6,"end_index":12}]}]}]}`), int64(0))
	f.Add([]byte(`{"id":"v1_a","status":"failed","outputs":[{"type":"text","text":"x\xff","annotations":[{"type":"url_citation","url":"http://x","start_index":0,"end_index":1}]}],"error":{"code":500,"message":"m"}}`), int64(3))
	f.Add([]byte(`{"id":"v1_a","status":"in_progress","steps":[{"type":"thought"}]}`), int64(64))
	f.Add([]byte(`{"id":"v1_a","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"abcdef","annotations":[{"type":"url_citation","url":"https://x","start_index":1.5,"end_index":4},{"type":"url_citation","url":"https://x","start_index":"1","end_index":4},{"type":"url_citation","url":"https://x","start_index":9223372036854775808,"end_index":2},{"type":"url_citation","url":7}]}]}]}`), int64(0))
	f.Add([]byte(`{"id":"v1_a","status":"failed","errors":[{"code":"https://e","message":"m"},{"code":3},"x"],"steps":[{"type":"model_output","error":{"code":"13","message":5}}]}`), int64(0))
	f.Add([]byte(`{"id":"v1_a","status":"paused_for_review","continuation_token":"t"}`), int64(0))
	f.Fuzz(func(t *testing.T, body []byte, max int64) {
		it, err := ParseInteraction(body)
		if err != nil {
			return
		}
		if max < 0 {
			max = -max
		}
		rep := ExtractReport(it, Bounds{MaxReportBytes: max % 4096, MaxCitations: 8})
		if !utf8.ValidString(rep.Text) {
			t.Fatal("report is not valid UTF-8")
		}
		if max%4096 > 0 && int64(len(rep.Text)) > max%4096 {
			t.Fatalf("report %d bytes over bound %d", len(rep.Text), max%4096)
		}
		if len(rep.Citations) > 8 {
			t.Fatal("citation bound exceeded")
		}
		for _, c := range rep.Citations {
			if (c.StartByte == nil) != (c.EndByte == nil) {
				t.Fatalf("citation %+v has half a span", c)
			}
			if !c.HasSpan() {
				continue
			}
			start, end := *c.StartByte, *c.EndByte
			if start < 0 || end <= start || end > int64(len(rep.Text)) {
				t.Fatalf("citation %+v outside report of %d bytes", c, len(rep.Text))
			}
			if !utf8.RuneStart(rep.Text[start]) || (end < int64(len(rep.Text)) && !utf8.RuneStart(rep.Text[end])) {
				t.Fatalf("citation %+v not on rune boundaries", c)
			}
		}
		if _, err := json.Marshal(rep.Citations); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRetryAfter: any Retry-After header value gives a wait between 0 and
// the one-hour cap, without panicking.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "0", "-1", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "Mon, 01 Jun 2026 12:00:30 GMT", "", " 5 ", "1e3"} {
		f.Add(s)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("%q → %s", v, d)
		}
	})
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7": 7 * time.Second, "0": 0, "-3": 0, "junk": 0, "999999": time.Hour,
		"Mon, 01 Jun 2026 12:00:30 GMT": 30 * time.Second, "Mon, 01 Jun 2026 11:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("%q: %s, want %s", v, got, want)
		}
	}
}

// An annotation without offsets is a source attribution: kept (not counted
// as dropped), without a span, and unaffected by truncation.
func TestExtractReportKeepsOffsetlessCitations(t *testing.T) {
	it := &Interaction{ID: "x", Status: StatusCompleted, Steps: []Step{{Type: "model_output", Content: []Content{
		{Type: "text", Text: "Some findings.", Annotations: []Annotation{
			{Type: "url_citation", URL: "https://src.example/a", Title: "Source A"},
			{Type: "url_citation", URL: "ftp://src.example/b"}, // bad scheme: dropped even without offsets
			{Type: "url_citation", URL: "https://src.example/c", StartIndex: i64(0), EndIndex: i64(4)},
		}},
	}}}}
	rep := ExtractReport(it, Bounds{MaxReportBytes: 2})
	if rep.DroppedCitations != 2 { // the bad scheme, and the span cut by truncation
		t.Fatalf("dropped %d: %+v", rep.DroppedCitations, rep.Citations)
	}
	if len(rep.Citations) != 1 || rep.Citations[0].URL != "https://src.example/a" || rep.Citations[0].HasSpan() || rep.Citations[0].Title != "Source A" {
		t.Fatalf("citations %+v", rep.Citations)
	}
	b, _ := json.Marshal(rep.Citations[0])
	if string(b) != `{"url":"https://src.example/a","title":"Source A"}` {
		t.Fatalf("json %s", b)
	}
}

// One malformed citation never makes a finished interaction unusable
// (start_index 1.5, "1", 2^63): it is dropped and counted.
func TestBadCitationIndicesAreDropped(t *testing.T) {
	body := `{"id":"v1_a","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"abcdef","annotations":[` +
		`{"type":"url_citation","url":"https://ok.example/","start_index":0,"end_index":3},` +
		`{"type":"url_citation","url":"https://x.example/","start_index":1.5,"end_index":4},` +
		`{"type":"url_citation","url":"https://x.example/","start_index":"1","end_index":4},` +
		`{"type":"url_citation","url":"https://x.example/","start_index":9223372036854775808,"end_index":9223372036854775809}]}]}]}`
	it, err := ParseInteraction([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	rep := ExtractReport(it, Bounds{})
	if rep.Text != "abcdef" || len(rep.Citations) != 1 || rep.DroppedCitations != 3 {
		t.Fatalf("%+v %q", rep, rep.Text)
	}
}

// Reasons: errors[] entries and model_output step errors, leniently.
func TestReasons(t *testing.T) {
	body := `{"id":"v1_a","status":"failed","errors":[{"code":"https://e.example/quota","message":"quota"},{"code":3}],"steps":[{"type":"model_output","error":{"code":13,"message":"cut"}},{"type":"model_output","error":{"code":"x","message":"odd"}}]}`
	it, err := ParseInteraction([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := it.Reasons()
	want := []ProviderError{{"https://e.example/quota", "quota"}, {"3", ""}, {"13", "cut"}, {"", "odd"}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
