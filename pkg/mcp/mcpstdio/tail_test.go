package mcpstdio

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestTailBufferKeepsLastBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		tb := newTailBuffer(StderrTailBytes)
		var all []byte
		for range r.IntN(40) + 1 {
			n := r.IntN(3 * StderrTailBytes / 2)
			if trial%3 == 0 {
				n = r.IntN(100)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.IntN(256))
			}
			if _, err := tb.Write(p); err != nil {
				t.Fatal(err)
			}
			all = append(all, p...)
		}
		want := all
		if len(want) > StderrTailBytes {
			want = want[len(want)-StderrTailBytes:]
		}
		if got := tb.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("trial %d: tail of %d bytes differs (got %d bytes)", trial, len(all), len(got))
		}
		if tb.Total() != int64(len(all)) {
			t.Fatalf("total %d, want %d", tb.Total(), len(all))
		}
	}
}
