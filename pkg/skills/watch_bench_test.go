package skills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// benchWatch starts a watch of root with real fsnotify and returns the
// channel of its events.
func benchWatch(b *testing.B, root string, interval time.Duration) (<-chan WatchEvent, func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan WatchEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Watch(ctx, []WatchSource{{Parent: root}}, WatchOptions{Interval: interval, Emit: func(ev WatchEvent) error {
			select {
			case events <- ev:
			case <-ctx.Done():
			}
			return nil
		}})
	}()
	if ev := <-events; ev.Event != EventChange || !ev.Initial {
		b.Fatalf("first event %+v", ev)
	}
	return events, func() { cancel(); <-done }
}

// awaitTree waits for a change reporting skill at tree.
func awaitTree(b *testing.B, events <-chan WatchEvent, skill, tree string) {
	for {
		select {
		case ev := <-events:
			if changed([]WatchEvent{ev}, skill, tree) {
				return
			}
		case <-time.After(20 * time.Second):
			b.Fatalf("no change to %s within 20 s", tree)
		}
	}
}

func benchTreeOf(b *testing.B, root, skill string) string {
	r, err := os.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer fsx.CloseRead(r)
	st, _ := scanSkill(r, root, skill)
	if st.rev == nil {
		b.Fatal(st.problem)
	}
	return st.rev.TreeSHA256
}

// BenchmarkWatchLatency is edit to line: the time from writing a support
// file until the change line reporting the new tree is emitted, with the
// default coalescing interval and with a short one (the interval is most
// of the latency by design). p50/p90 are reported beside the mean.
func BenchmarkWatchLatency(b *testing.B) {
	for _, interval := range []time.Duration{DefaultWatchInterval, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("interval=%s", interval), func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "skills")
			writeSkillB(b, root, "pdf")
			events, stop := benchWatch(b, root, interval)
			defer stop()
			file := filepath.Join(root, "pdf", "references", "notes.md")
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				t0 := time.Now()
				if err := os.WriteFile(file, []byte(fmt.Sprintf("edit %d\n", i)), 0o644); err != nil {
					b.Fatal(err)
				}
				awaitTree(b, events, "pdf", benchTreeOf(b, root, "pdf"))
				lat = append(lat, time.Since(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
			}
		})
	}
}

// BenchmarkWatchMemory10kEdits makes 10,000 edits (each a new content of
// one file, spread over 10 skills) while a watch runs, waits until the
// watch reports the final trees, and reports the live heap after 1,000
// and after 10,000 edits: flat memory means the two are about equal. It
// makes the 10,000 edits once per call whatever b.N is (the figures are
// per run, not per op).
func BenchmarkWatchMemory10kEdits(b *testing.B) {
	{
		root := filepath.Join(b.TempDir(), "skills")
		for s := 0; s < 10; s++ {
			writeSkillB(b, root, fmt.Sprintf("s%d", s))
		}
		events, stop := benchWatch(b, root, 5*time.Millisecond)
		// Drain lines as they come, keeping the last revision seen.
		last := make(chan string, 1)
		quit := make(chan struct{})
		go func() {
			rev := ""
			for {
				select {
				case ev := <-events:
					rev = ev.Revision
				case last <- rev:
				case <-quit:
					return
				}
			}
		}()
		settle := func() uint64 {
			want := diskRevision(root)
			deadline := time.Now().Add(30 * time.Second)
			for <-last != want {
				if time.Now().After(deadline) {
					b.Fatal("the watch did not catch up within 30 s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		var at1k uint64
		t0 := time.Now()
		for i := 1; i <= 10_000; i++ {
			f := filepath.Join(root, fmt.Sprintf("s%d", i%10), "references", "notes.md")
			if err := os.WriteFile(f, []byte(fmt.Sprintf("edit %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
			if i == 1000 {
				at1k = settle()
			}
		}
		at10k := settle()
		elapsed := time.Since(t0)
		close(quit)
		stop()
		b.ReportMetric(float64(at1k)/(1<<20), "heap-MiB-at-1k")
		b.ReportMetric(float64(at10k)/(1<<20), "heap-MiB-at-10k")
		b.ReportMetric(float64(10_000)/elapsed.Seconds(), "edits/s")
	}
}

func writeSkillB(b *testing.B, root, name string) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
		b.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: bench\n---\n", name)
	if err := os.WriteFile(filepath.Join(dir, skilllint.SkillFile), []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "references", "notes.md"), []byte("start\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}
