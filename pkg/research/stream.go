// Live progress: while a job is waited for, its interaction's stream is
// followed for thought summaries, step changes and usage, shown as
// progress; the stream's end wakes the wait to poll at once, and while the
// stream is live polls only back it up (Budgets.StreamBackstop). Polling
// stays the authority on the terminal state (docs/research.md, "Live
// progress").

package research

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Stream resumption bounds: how often a broken stream is opened again
// (with the last event id it delivered) before the wait falls back to
// polling alone, and the pause before each attempt (at most the fast poll
// interval).
const (
	maxStreamResumes = 8
	streamRetryPause = time.Second
)

// liveStream is one followed stream.
type liveStream struct {
	live  atomic.Bool
	ended chan struct{} // closed once the stream is over (ended, refused or given up)
	// terminal is closed when the stream reported the interaction's end.
	terminal  chan struct{}
	termOnce  sync.Once
	endOnce   sync.Once
	lastEvent atomic.Value // string
	// fallback says why the stream was given up ("" when it ended).
	fallback atomic.Value // string
	// unauthorized: given up because the custody check before an
	// opening refused it (streamHooks.authorize).
	unauthorized atomic.Bool
}

// streamLive reports whether a live stream follows job id in this process.
func (s *Service) streamLive(id string) bool {
	v, ok := s.streams.Load(id)
	return ok && v.(*liveStream).live.Load()
}

// pollInterval is the wait before a running job's next poll: the
// backstop while a stream follows it, else the polling interval.
func (s *Service) pollInterval(now time.Time, j *Job) time.Duration {
	d := s.interval(now, j.SubmittedAt, 0)
	if s.streamLive(j.ID) {
		d = max(d, s.budgets().StreamBackstop)
		// The wall-clock budget is still enforced on time: a poll is due
		// at the deadline at the latest.
		if left := fromMs(j.DeadlineAt).Sub(now); j.DeadlineAt > 0 && left > 0 && left < d {
			d = left
		}
	}
	return d
}

// progressSink writes stream events as progress: text lines (escaped
// provider text) or, for --events, one JSON object per line.
type progressSink struct {
	mu     sync.Mutex
	w      io.Writer
	ndjson bool
	job    string
	// ended: the provider's terminal status was written; finish then
	// writes nothing.
	ended bool
}

// StreamEvent is one line of `research wait --events`.
type StreamEvent struct {
	Job string `json:"job"`
	google.StreamEvent
}

func (p *progressSink) event(ev google.StreamEvent) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Type == google.EventCompleted || (ev.Type == google.EventStatusUpdate && google.Terminal(ev.Status)) {
		p.ended = true
	}
	if p.ndjson {
		b, err := json.Marshal(StreamEvent{Job: p.job, StreamEvent: ev})
		if err == nil {
			_, _ = p.w.Write(append(b, '\n')) // progress is best effort
		}
		return
	}
	var line string
	switch {
	case ev.Summary != "":
		line = "thought: " + termsafe.Text(ev.Summary)
	case ev.Type == google.EventStepStart && ev.StepType != "":
		line = fmt.Sprintf("step %d: %s", ev.Index, termsafe.Text(ev.StepType))
	case ev.Type == google.EventStatusUpdate || ev.Type == google.EventCompleted:
		line = "status: " + termsafe.Text(ev.Status)
		if ev.Usage != nil {
			line += fmt.Sprintf(" (%d tokens)", ev.Usage.Tokens())
		}
	case ev.Type == google.EventError:
		line = "stream error: " + termsafe.Text(ev.Error)
	default:
		return
	}
	_, _ = fmt.Fprintf(p.w, "\r\x1b[Kresearch %s: %s\n", p.job, line)
}

// EventEnded is clawkit's own last event of --events when the polls saw
// the job's end before the stream delivered it (docs/research.md, "Live
// progress").
const EventEnded = "clawkit.ended"

// finish writes the job's end once the wait is over and the stream has
// stopped, unless the stream already wrote the provider's terminal status:
// polls decide the end, so on a loaded machine they can see it first, and
// the last progress line (or event) must not depend on that race. The
// tokens are the job's (its usage as recorded).
func (p *progressSink) finish(j *Job) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	status := j.ProviderStatus
	if status == "" {
		status = j.State
	}
	if p.ndjson {
		b, err := json.Marshal(StreamEvent{Job: p.job, StreamEvent: google.StreamEvent{Type: EventEnded, Status: status, Usage: j.Usage}})
		if err == nil {
			_, _ = p.w.Write(append(b, '\n')) // progress is best effort
		}
		return
	}
	line := "status: " + termsafe.Text(status)
	if j.Usage != nil {
		line += fmt.Sprintf(" (%d tokens)", j.Usage.Tokens())
	}
	_, _ = fmt.Fprintf(p.w, "\r\x1b[Kresearch %s: %s\n", p.job, line)
}

func (p *progressSink) note(msg string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ndjson {
		b, _ := json.Marshal(StreamEvent{Job: p.job, StreamEvent: google.StreamEvent{Type: "clawkit.polling", Error: msg}})
		_, _ = p.w.Write(append(b, '\n'))
		return
	}
	_, _ = fmt.Fprintf(p.w, "\r\x1b[Kresearch %s: %s\n", p.job, termsafe.Text(msg))
}

// streamHooks are what a follower other than a wait adds (the gateway's
// own streams, gatewaystreams.go): authorize, when set, is the custody
// check before every (re)opening of the stream and gives the credential
// to open it with (a refusal ends the stream: the job is polled alone);
// event, when set, sees every event after the progress sink.
type streamHooks struct {
	authorize func() (credential, error)
	event     func(google.StreamEvent)
}

// follow starts following j's interaction stream until ctx ends or the
// stream is over. A second follower of the same job shares the first's
// (owned false: it neither ends it nor waits for its end, and sees no
// progress of it).
func (s *Service) follow(ctx context.Context, j *Job, cred credential, sink *progressSink, hooks streamHooks) (ls *liveStream, owned bool) {
	ls = &liveStream{ended: make(chan struct{}), terminal: make(chan struct{})}
	if v, loaded := s.streams.LoadOrStore(j.ID, ls); loaded {
		return v.(*liveStream), false
	}
	handle := j.Handle
	idle := max(2*s.budgets().StreamBackstop, 5*time.Second)
	go func() {
		// Gone from the map before it is ended: whoever waits for the end
		// finds no stream of the job left behind.
		defer ls.endOnce.Do(func() { close(ls.ended) })
		defer s.streams.CompareAndDelete(j.ID, ls)
		defer ls.live.Store(false)
		last := ""
		for attempt := 0; ctx.Err() == nil; attempt++ {
			if hooks.authorize != nil {
				c, err := hooks.authorize()
				if err != nil {
					ls.unauthorized.Store(true)
					ls.fallback.Store("no authority to follow it: " + err.Error())
					return
				}
				cred = c
			}
			ls.live.Store(true)
			err := s.client(j, cred).Stream(ctx, handle, last, idle, func(ev google.StreamEvent) error {
				if ev.EventID != "" {
					last = ev.EventID
					ls.lastEvent.Store(last)
				}
				sink.event(ev)
				if hooks.event != nil {
					hooks.event(ev)
				}
				if ev.Type == google.EventCompleted || (ev.Type == google.EventStatusUpdate && google.Terminal(ev.Status)) {
					ls.termOnce.Do(func() { close(ls.terminal) })
				}
				return nil
			})
			select {
			case <-ls.terminal:
				return
			default:
			}
			if ctx.Err() != nil {
				return
			}
			ls.live.Store(false)
			e := google.AsError(err)
			if errors.Is(err, google.ErrStreamUnavailable) || (e != nil && (e.Auth || e.NotSent)) || attempt >= maxStreamResumes {
				why := "the provider serves no stream for this interaction"
				if err != nil && !errors.Is(err, google.ErrStreamUnavailable) {
					why = "the stream broke " + fmt.Sprint(attempt+1) + " times"
				}
				ls.fallback.Store(why)
				sink.note("polling: " + why)
				return
			}
			// Broken (or ended without the interaction's end): resume
			// after the last event delivered.
			t := time.NewTimer(min(streamRetryPause, s.budgets().FastInterval))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return ls, true
}
