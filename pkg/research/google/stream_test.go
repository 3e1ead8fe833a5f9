package google_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "google.golang.org/genai/interactions/models/interactions"

	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

// sdkEvent decodes one stream event's data as the SDK's
// InteractionSSEEvent (ok false when the SDK refuses it).
func sdkEvent(data []byte) (sdk.InteractionSSEEvent, bool) {
	var ev sdk.InteractionSSEEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, false
	}
	return ev, true
}

// compareEventWithSDK: wherever the SDK reads an event, clawkit reads the
// same kind, event id, status and thought summary.
func compareEventWithSDK(t *testing.T, data []byte) {
	t.Helper()
	ours, err := google.ParseStreamEvent(data)
	ev, ok := sdkEvent(data)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%s: the SDK reads it, clawkit refuses it: %v", data, err)
	}
	var id *string
	var status, summary string
	switch {
	case ev.InteractionStatusUpdate != nil:
		id, status = ev.InteractionStatusUpdate.EventID, string(ev.InteractionStatusUpdate.Status)
	case ev.InteractionCreatedEvent != nil:
		id, status = ev.InteractionCreatedEvent.EventID, string(ev.InteractionCreatedEvent.Interaction.Status)
	case ev.InteractionCompletedEvent != nil:
		id, status = ev.InteractionCompletedEvent.EventID, string(ev.InteractionCompletedEvent.Interaction.Status)
	case ev.StepStart != nil:
		id = ev.StepStart.EventID
	case ev.StepStop != nil:
		id = ev.StepStop.EventID
	case ev.ErrorEvent != nil:
		id = ev.ErrorEvent.EventID
	case ev.StepDelta != nil:
		id = ev.StepDelta.EventID
		if d := ev.StepDelta.Delta.ThoughtSummaryDelta; d != nil {
			if tc := d.GetContentText(); tc != nil {
				summary = tc.Text
				if len(summary) > 2048 {
					summary = ours.Summary // bounded by clawkit; checked below
				}
			}
		}
	}
	if ev.Type != sdk.InteractionSSEEventTypeUnknown && ours.Type != string(ev.Type) {
		t.Fatalf("%s: type clawkit %q, SDK %q", data, ours.Type, ev.Type)
	}
	if id != nil && ours.EventID != *id {
		t.Fatalf("%s: event id clawkit %q, SDK %q", data, ours.EventID, *id)
	}
	if status != "" && ours.Status != status {
		t.Fatalf("%s: status clawkit %q, SDK %q", data, ours.Status, status)
	}
	if summary != ours.Summary {
		t.Fatalf("%s: summary clawkit %q, SDK %q", data, ours.Summary, summary)
	}
}

// rawStream reads the fake's stream as bytes, returning each event's data.
func rawStream(t *testing.T, l *fakeapi.Listener, id, last string) [][]byte {
	t.Helper()
	u := l.URL + "/v1/interactions/" + id + "?stream=true"
	if last != "" {
		u += "&last_event_id=" + last
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("x-goog-api-key", "k")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }() // read to its end or given up: nothing more is wanted
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var out [][]byte
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if d == "[DONE]" {
				return out
			}
			out = append(out, []byte(d))
		}
	}
	t.Fatalf("the stream ended without [DONE]: %v", sc.Err())
	return nil
}

// TestFakeStreamIsTheSDKs: every event the fake streams decodes into the
// SDK's InteractionSSEEvent with a known kind, and clawkit reads each as
// the SDK does; a resumed stream continues after the event named.
func TestFakeStreamIsTheSDKs(t *testing.T) {
	l := startFake(t)
	c := client(l)
	id := l.Seed("fake:usage-running fake-polls:3")
	done := make(chan [][]byte)
	go func() { done <- rawStream(t, l, id, "") }()
	for i := 0; i < 3; i++ {
		waitEvents(t, l, id, i)
		if _, err := c.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	events := <-done
	kinds := map[string]int{}
	for _, d := range events {
		ev, ok := sdkEvent(d)
		if !ok || ev.Type == sdk.InteractionSSEEventTypeUnknown {
			t.Fatalf("not an SDK event: %s", d)
		}
		kinds[string(ev.Type)]++
		compareEventWithSDK(t, d)
	}
	for _, k := range []string{google.EventCreated, google.EventStatusUpdate, google.EventStepStart, google.EventStepDelta, google.EventStepStop, google.EventCompleted} {
		if kinds[k] == 0 {
			t.Fatalf("no %s event in %v", k, kinds)
		}
	}
	last, _ := google.ParseStreamEvent(events[len(events)-1])
	if last.Type != google.EventCompleted || last.Status != "completed" || last.Usage == nil || last.Usage.Total == 0 {
		t.Fatalf("last event %+v", last)
	}
	// Resumed after the second event: exactly the rest.
	first, _ := google.ParseStreamEvent(events[1])
	rest := rawStream(t, l, id, first.EventID)
	if len(rest) != len(events)-2 || string(rest[0]) != string(events[2]) {
		t.Fatalf("resumed after %s: %d events, want %d", first.EventID, len(rest), len(events)-2)
	}
}

// waitEvents waits until the fake has streamed the moves of polls polls.
func waitEvents(t *testing.T, l *fakeapi.Listener, id string, polls int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if l.StreamedPolls(id) >= polls {
			return
		}
	}
	t.Fatalf("the stream never caught up with poll %d", polls)
}

// TestClientStreamResumes: clawkit's Stream reads the fake's events, and a
// dropped stream is resumed by its last event id without losing or
// repeating one.
func TestClientStreamResumes(t *testing.T) {
	l := startFake(t)
	c := client(l)
	id := l.Seed("fake:stream-drop-once fake-polls:2")
	var mu sync.Mutex
	var got []google.StreamEvent
	collect := func(ev google.StreamEvent) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	}
	go func() {
		// Poll until it ends (it runs until the stream was resumed).
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if it, err := c.Get(context.Background(), id); err == nil && google.Terminal(it.Status) {
				return
			}
		}
	}()
	err := c.Stream(context.Background(), id, "", time.Minute, collect)
	if err == nil {
		t.Fatal("the dropped stream ended without an error")
	}
	mu.Lock()
	lastID := got[len(got)-1].EventID
	n := len(got)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d events before the drop, want 1", n)
	}
	if err := c.Stream(context.Background(), id, lastID, time.Minute, collect); err != nil {
		t.Fatal(err)
	}
	for i, ev := range got {
		if want := id + "-ev" + itoa(i+1); ev.EventID != want {
			t.Fatalf("event %d is %s, want %s", i, ev.EventID, want)
		}
	}
	if got[len(got)-1].Type != google.EventCompleted {
		t.Fatalf("last %+v", got[len(got)-1])
	}
	if l.Count("GET /interactions/"+id+"?stream=true&last_event_id="+lastID) != 1 {
		t.Fatalf("no resume with last_event_id %s: %+v", lastID, l.Requests())
	}
	// A stream the provider refuses is not one: the caller polls.
	ref := l.Seed("fake:stream-refused")
	if err := c.Stream(context.Background(), ref, "", time.Minute, collect); !errors.Is(err, google.ErrStreamUnavailable) {
		t.Fatalf("refused stream: %v", err)
	}
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string { b, _ := json.Marshal(i); return string(b) }

var streamSeeds = []string{
	`{"event_type":"interaction.status_update","interaction_id":"v1_x","status":"in_progress","event_id":"e1","usage":{"total_tokens":5}}`,
	`{"event_type":"step.delta","index":2,"event_id":"e2","delta":{"type":"thought_summary","content":{"type":"text","text":"thinking"}}}`,
	`{"event_type":"step.start","index":1,"step":{"type":"thought"}}`,
	`{"event_type":"interaction.completed","interaction":{"id":"v1_x","status":"completed"}}`,
	`{"event_type":"error","error":{"code":"x","message":"boom"}}`,
	`{"event_type":"step.stop","index":1,"usage":{"total_tokens":9}}`,
	`{"EVENT_TYPE":"step.delta","delta":{"TYPE":"thought_summary"}}`,
	`{"event_type":"something.new"}`, `[]`, `{"event_type":1}`,
}

func FuzzStreamEventMatchesSDK(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := google.ParseStreamEvent(data)
		if err == nil && (len(ev.Summary) > 2048 || len(ev.Error) > 2048) {
			t.Fatalf("unbounded: %+v", ev)
		}
		compareEventWithSDK(t, data)
	})
}
