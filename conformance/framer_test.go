package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/clawkit/clawkit/pkg/mcp"
)

type framerStream struct {
	Max    int      `json:"max"`
	Chunks []string `json:"chunks"`
	raw    [][]byte
}

type framerStep struct {
	Lines   []string `json:"lines"`
	Threw   bool     `json:"threw"`
	Message string   `json:"message"`
	Pending int      `json:"pending"`
}

// framerStreams generates the differential corpus from a seed: limits from
// 1 to 32 bytes, chunks built from LFs, CRs, multi-byte UTF-8 pieces and
// runs whose lengths sit around the limit, plus empty chunks. The default
// seed and size are what CI runs; CONFORMANCE_SEED and
// CONFORMANCE_FRAMER_STREAMS explore further.
func framerStreams(seed uint64, n int) []framerStream {
	rng := rand.New(rand.NewPCG(seed, 0x6672616d6572))
	pieces := [][]byte{{'\n'}, {'\r', '\n'}, {'\r'}, []byte("é"), []byte("€"), []byte("😀"), {0xf0, 0x9f}, {0x98, 0x80}, {'{'}, {'}'}, {0}}
	out := make([]framerStream, n)
	for i := range out {
		max := 1 + rng.IntN(32)
		nc := 1 + rng.IntN(8)
		s := framerStream{Max: max}
		for j := 0; j < nc; j++ {
			var c []byte
			for k := rng.IntN(8); k > 0; k-- {
				switch p := rng.IntN(20); {
				case p < 5:
					c = append(c, pieces[rng.IntN(len(pieces))]...)
				case p < 7:
					c = append(c, bytes.Repeat([]byte{'a'}, max-1+rng.IntN(3))...) // max-1, max, max+1
				case p < 12:
					c = append(c, bytes.Repeat([]byte{'b'}, rng.IntN(max/2+1))...)
				default:
					c = append(c, '\n')
				}
			}
			s.raw = append(s.raw, c)
			s.Chunks = append(s.Chunks, base64.StdEncoding.EncodeToString(c))
		}
		out[i] = s
	}
	return out
}

// clawkitSteps runs pkg/mcp's LineFramer the way the driver runs the
// release's framer.
func clawkitSteps(s framerStream) []framerStep {
	f := mcp.NewLineFramer(s.Max)
	var steps []framerStep
	for _, c := range s.raw {
		st := framerStep{Lines: []string{}}
		err := f.Push(c, func(line []byte) error {
			st.Lines = append(st.Lines, base64.StdEncoding.EncodeToString(line))
			return nil
		})
		if err != nil {
			st.Threw = true
			if !errors.Is(err, mcp.ErrFrameTooLarge) {
				st.Message = err.Error()
			}
		}
		st.Pending = len(f.Pending())
		steps = append(steps, st)
	}
	return steps
}

// TestFramerDifferential runs OpenClaw's createBoundedLineFramer and
// clawkit's LineFramer on the same seeded streams. Up to and including the
// first overflow they must agree exactly: the lines yielded (bytes), the
// chunk that overflows, and the pending count after every push. After the
// overflow both yield nothing more; they differ only as docs/conformance.md
// says: clawkit's framer stays failed and holds nothing (pending 0, the same
// error on every push, an empty chunk included), OpenClaw's keeps counting
// (pending grows with each chunk) and throws on every non-empty chunk.
func TestFramerDifferential(t *testing.T) {
	// The four references run side by side: most of their time is spent
	// waiting (Node start-up, stop graces, the producer\'s I/O).
	t.Parallel()
	node24(t)
	seed, n := uint64(24), 10000
	if v, err := strconv.ParseUint(os.Getenv("CONFORMANCE_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("CONFORMANCE_FRAMER_STREAMS")); err == nil && v > 0 {
		n = v
	}
	streams := framerStreams(seed, n)
	for _, r := range releases {
		t.Run(r.version, func(t *testing.T) {
			out, ok := runDriver(t, r, refFramer, "framer.mjs", streams)
			if !ok {
				t.Logf("openclaw %s does not ship %s: nothing to compare (the oldest release that does is 2026.9.5)", r.version, refFramer)
				return
			}
			var res [][]framerStep
			if err := json.Unmarshal(out.Results, &res); err != nil {
				t.Fatal(err)
			}
			if len(res) != len(streams) {
				t.Fatalf("%d results for %d streams", len(res), len(streams))
			}
			overflowed, lines, fails := 0, 0, 0
			for i, s := range streams {
				oc, ck := res[i], clawkitSteps(s)
				failed := false
				for j := range s.raw {
					o, c := oc[j], ck[j]
					if !failed {
						lines += len(c.Lines)
						if !equalStrings(o.Lines, c.Lines) || o.Threw != c.Threw || (!o.Threw && o.Pending != c.Pending) {
							fails++
							if fails <= 5 {
								t.Errorf("stream %d (max %d) chunk %d: openclaw %+v, clawkit %+v", i, s.Max, j, o, c)
							}
						}
						if o.Threw && c.Threw {
							failed = true
							overflowed++
						}
						continue
					}
					// After the first overflow.
					if len(o.Lines) != 0 || len(c.Lines) != 0 || !c.Threw || c.Pending != 0 || o.Threw != (len(s.raw[j]) > 0) {
						fails++
						if fails <= 5 {
							t.Errorf("stream %d (max %d) chunk %d after the overflow: openclaw %+v, clawkit %+v (documented: both yield nothing; clawkit fails every push and holds nothing; openclaw throws on non-empty chunks)", i, s.Max, j, o, c)
						}
					}
				}
			}
			t.Logf("openclaw %s (%s): %d streams (seed %d), %d lines compared, %d overflows at the same chunk, %d differences", r.version, out.Chunk, len(streams), seed, lines, overflowed, fails)
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
