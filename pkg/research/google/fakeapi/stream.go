package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The interaction stream (GET …/interactions/{id}?stream=true), served as
// the SDKs read it: Server-Sent Events whose data are InteractionSSEEvent
// values (event_type, event_id), ended by "data: [DONE]". The stream
// reports what happens to the interaction: it does not move it on (polls
// do, or the clock with fake-ms), so a job takes the same polls with and
// without a stream. Each move is a status update (with usage when the
// interaction reports any) and a thought step whose summary is
// StreamSummary(n) when the create asked for thinking summaries ("auto");
// the end is interaction.completed. last_event_id
// resumes after that event; an unknown one is refused 400.

// StreamSummary is the thought summary of the stream's n-th step.
func StreamSummary(n int) string { return fmt.Sprintf("Thinking about the sources (step %d)", n) }

// streamTick is how often an open stream looks at its interaction.
const streamTick = 10 * time.Millisecond

func eventID(it *item, n int) string { return fmt.Sprintf("%s-ev%d", it.id, n) }

// syncEvents appends the events of what happened to it since the last
// ones (caller holds s.mu).
func syncEvents(it *item) {
	if it.finishAfter > 0 {
		advance(it)
	}
	add := func(ev map[string]any) {
		ev["event_id"] = eventID(it, len(it.events)+1)
		it.events = append(it.events, ev)
	}
	if len(it.events) == 0 {
		add(map[string]any{"event_type": "interaction.created", "interaction": map[string]any{"id": it.id, "status": "in_progress", "object": "interaction"}})
	}
	if it.emitDone || (it.polls == it.emitPolls && it.status == it.emitStatus) {
		return
	}
	it.emitPolls, it.emitStatus = it.polls, it.status
	doc := render(it)
	up := map[string]any{"event_type": "interaction.status_update", "interaction_id": it.id, "status": it.status}
	if u, ok := doc["usage"]; ok {
		up["usage"] = u
	}
	add(up)
	if !terminal(it.status) && it.status != "requires_continuation" {
		n := len(it.events)
		add(map[string]any{"event_type": "step.start", "index": n, "step": map[string]any{"type": "thought", "signature": "sig"}})
		if it.summaries {
			add(map[string]any{"event_type": "step.delta", "index": n, "delta": map[string]any{"type": "thought_summary",
				"content": map[string]any{"type": "text", "text": StreamSummary(it.polls)}}})
		}
		add(map[string]any{"event_type": "step.stop", "index": n})
		return
	}
	if terminal(it.status) {
		inter := map[string]any{"id": it.id, "status": it.status, "object": "interaction"}
		if u, ok := doc["usage"]; ok {
			inter["usage"] = u
		}
		add(map[string]any{"event_type": "interaction.completed", "interaction": inter})
		it.emitDone = true
	}
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, e Entry, id string) {
	e.Path += "?stream=true"
	last := r.URL.Query().Get("last_event_id")
	if last != "" {
		e.Path += "&last_event_id=" + last
	}
	e.Stream, e.LastEventID = true, last
	s.mu.Lock()
	it := s.items[id]
	if it != nil {
		e.Scenario = it.scenario
		it.streams++
	}
	s.mu.Unlock()
	switch {
	case it == nil || strings.Contains(id, "/"):
		e.Result = "404"
		s.record(e)
		writeStatus(w, 404, "NOT_FOUND", "interaction not found")
		return
	case it.scenario == "stream-refused":
		e.Result = "400"
		s.record(e)
		writeStatus(w, 400, "INVALID_ARGUMENT", "streaming is not available for this interaction")
		return
	}
	cursor := 0
	if last != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(last, it.id+"-ev"))
		s.mu.Lock()
		known := len(it.events)
		s.mu.Unlock()
		if err != nil || !strings.HasPrefix(last, it.id+"-ev") || n < 1 || n > known {
			e.Result = "400"
			s.record(e)
			writeStatus(w, 400, "INVALID_ARGUMENT", "last_event_id does not name an event of this interaction")
			return
		}
		cursor = n
		s.mu.Lock()
		it.resumed = true
		s.mu.Unlock()
	}
	e.Result = "200-stream"
	s.record(e)
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	dropAfter := -1
	s.mu.Lock()
	if it.scenario == "stream-drop-once" && it.streams == 1 {
		dropAfter = 1
	}
	s.mu.Unlock()
	sent := 0
	for {
		s.mu.Lock()
		syncEvents(it)
		pending := append([]map[string]any(nil), it.events[cursor:]...)
		done := it.emitDone
		s.mu.Unlock()
		for _, ev := range pending {
			if sent == dropAfter {
				drop(w)
				return
			}
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "event: %s\nid: %s\ndata: %s\n\n", ev["event_type"], ev["event_id"], b); err != nil {
				return // the client went away
			}
			if fl != nil {
				fl.Flush()
			}
			cursor++
			sent++
		}
		if done && cursor >= s.eventCount(it) {
			_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
			if fl != nil {
				fl.Flush()
			}
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.hang:
			return
		case <-time.After(streamTick):
		}
	}
}

func (s *Server) eventCount(it *item) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(it.events)
}

// StreamedPolls is the poll count the stream of interaction id has
// reported so far (tests wait for it before the next poll).
func (s *Server) StreamedPolls(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.items[id]; it != nil {
		return it.emitPolls
	}
	return -1
}
