package google

import (
	"encoding/json"
	"reflect"
	"testing"
)

var exactSeeds = []string{
	`{"id":"a","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"r"}]}]}`,
	`{"id":"a","status":"completed","steps":[{"Type":"model_output","content":[{"type":"text","text":"r"}]}]}`,
	`{"id":"a","status":"completed","steps":[{"type":"model_output","Content":[{"type":"text","text":"r"}]}]}`,
	`{"id":"a","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","T\u0065xt":"r"}]}]}`,
	`{"id":"a","status":"completed","Steps":[{"type":"model_output","content":[{"type":"text","text":"r"}]}]}`,
	"{\"id\":\"a\",\"\u017ftatus\":\"completed\"}",
	`{"id":"a","status":"completed","steps":[{"type":"thought","content":5},{"type":"model_output","content":[{"type":"image","data":"AA==","mime_type":"image/png"},{"type":"text","text":"x","annotations":[{"type":"url_citation","url":"https://e.x","start_index":0,"end_index":1}]}],"error":{"code":13,"message":"m"}}]}`,
}

func TestExactNamesOnly(t *testing.T) {
	want := []bool{true, false, false, false, false, false, true}
	for i, s := range exactSeeds {
		if got := exactNamesOnly([]byte(s)); got != want[i] {
			t.Errorf("%s: exactNamesOnly %v", s, got)
		}
	}
	// The kind is read in any case, as the SDKs' discriminator is.
	if it, err := ParseInteraction([]byte(exactSeeds[1])); err != nil || ExtractReport(it, Bounds{}).Text != "r" {
		t.Fatalf("Type: %v", err)
	}
	// A member named by case is not read, as the SDKs do not read it.
	for _, s := range exactSeeds[2:5] {
		it, err := ParseInteraction([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		if rep := ExtractReport(it, Bounds{}); rep.Text != "" {
			t.Errorf("%s: report %q", s, rep.Text)
		}
	}
	// A thought whose content is not a list: the SDKs read the body.
	it, err := ParseInteraction([]byte(exactSeeds[6]))
	if err != nil || ExtractReport(it, Bounds{}).Text != "x" {
		t.Fatalf("%v", err)
	}
}

// readable is what clawkit takes from an interaction.
func readable(it *Interaction) any {
	rep := ExtractReport(it, Bounds{})
	return []any{it.ID, it.Status, it.Created, it.Updated, string(it.Usage), it.ContinuationToken, rep, rep.Text, it.Reasons(), ExtractFigures(it, FigureBounds{})}
}

// FuzzExactNamesOnly: whenever the fast path is taken (encoding/json
// directly), it reads what the exact, member-by-member reading reads.
func FuzzExactNamesOnly(f *testing.F) {
	for _, s := range exactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !exactNamesOnly(body) {
			return
		}
		var std Interaction
		if json.Unmarshal(body, &std) != nil {
			return
		}
		exact, err := decodeInteractionExact(body)
		if err != nil {
			t.Fatalf("the exact reading refuses a body encoding/json reads: %v", err)
		}
		if !reflect.DeepEqual(readable(&std), readable(exact)) {
			t.Fatalf("fast and exact readings differ:\n%#v\n%#v", readable(&std), readable(exact))
		}
	})
}
