package mcp

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func collect(t *testing.T, f *LineFramer, chunks ...string) ([]string, error) {
	t.Helper()
	var got []string
	for _, c := range chunks {
		if err := f.Push([]byte(c), func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
			return got, err
		}
	}
	return got, nil
}

func TestLineFramer(t *testing.T) {
	cases := []struct {
		name    string
		max     int
		chunks  []string
		want    []string
		pending string
		err     bool
	}{
		{"several per chunk", 10, []string{"a\nbb\nccc\n"}, []string{"a", "bb", "ccc"}, "", false},
		{"CR kept", 10, []string{"a\r\nb\r\n"}, []string{"a\r", "b\r"}, "", false},
		{"empty lines yielded", 10, []string{"\n\na\n\n"}, []string{"", "", "a", ""}, "", false},
		{"incomplete final pending", 10, []string{"a\nbc"}, []string{"a"}, "bc", false},
		{"line split across chunks", 10, []string{"ab", "cd", "e\nf"}, []string{"abcde"}, "f", false},
		{"exactly max passes", 5, []string{"12345\n"}, []string{"12345"}, "", false},
		{"exactly max across chunks", 5, []string{"123", "45\n"}, []string{"12345"}, "", false},
		{"max+1 fails", 5, []string{"123456\n"}, nil, "", true},
		{"max+1 fails while pending", 5, []string{"1234", "56"}, nil, "", true},
		{"max+1 across chunks with LF", 5, []string{"1234", "56\n"}, nil, "", true},
		{"valid line before oversized still delivered", 5, []string{"ok\n1234567\n"}, []string{"ok"}, "", true},
		{"split UTF-8 reassembled", 20, []string{"h\xc3", "\xa9llo \xf0\x9f", "\xa6\x80\n"}, []string{"héllo 🦀"}, "", false},
		{"no decoding of invalid bytes", 20, []string{"\xff\xfe\x00\n"}, []string{"\xff\xfe\x00"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewLineFramer(c.max)
			got, err := collect(t, f, c.chunks...)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if err != nil && !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("err = %v, want ErrFrameTooLarge", err)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Fatalf("lines = %q, want %q", got, c.want)
			}
			if !c.err && string(f.Pending()) != c.pending {
				t.Fatalf("pending = %q, want %q", f.Pending(), c.pending)
			}
		})
	}
}

func TestLineFramerStaysFailedAndRetainsNothing(t *testing.T) {
	f := NewLineFramer(8)
	if err := f.Push([]byte("1234567"), func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := f.Push(bytes.Repeat([]byte("x"), 1<<20), func([]byte) error { return nil })
	var fe *FrameError
	if !errors.As(err, &fe) || fe.Limit != 8 {
		t.Fatalf("err = %v", err)
	}
	if len(f.Pending()) != 0 {
		t.Fatalf("retained %d bytes after the failure", len(f.Pending()))
	}
	called := false
	if err2 := f.Push([]byte("ok\n"), func([]byte) error { called = true; return nil }); err2 == nil || called {
		t.Fatalf("a failed framer went on: err=%v called=%v", err2, called)
	}
}

func TestLineFramerYieldErrorStops(t *testing.T) {
	f := NewLineFramer(8)
	stop := errors.New("stop")
	n := 0
	err := f.Push([]byte("a\nb\nc\n"), func([]byte) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err=%v n=%d", err, n)
	}
}

// referenceLines is the obvious, slow framing used to check the framer.
func referenceLines(data []byte, max int) (lines []string, pending string, tooLarge bool) {
	parts := bytes.Split(data, []byte("\n"))
	for i, p := range parts {
		if len(p) > max {
			return lines, "", true
		}
		if i == len(parts)-1 {
			return lines, string(p), false
		}
		lines = append(lines, string(p))
	}
	return lines, "", false
}

func FuzzLineFramer(f *testing.F) {
	f.Add([]byte("a\nbb\nccc"), uint8(3), uint8(2))
	f.Add([]byte("12345\n123456\n"), uint8(5), uint8(4))
	f.Add([]byte("\r\n\n\xc3\xa9\n"), uint8(1), uint8(1))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"), uint8(40), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, max, step uint8) {
		m := int(max)%64 + 1
		s := int(step)%17 + 1
		fr := NewLineFramer(m)
		var got []string
		var err error
		for i := 0; i < len(data) && err == nil; i += s {
			end := min(i+s, len(data))
			err = fr.Push(data[i:end], func(l []byte) error {
				if len(l) > m {
					t.Fatalf("yielded %d bytes over the %d limit", len(l), m)
				}
				got = append(got, string(l))
				return nil
			})
			if len(fr.Pending()) > m {
				t.Fatalf("pending %d bytes over the %d limit", len(fr.Pending()), m)
			}
		}
		want, pending, tooLarge := referenceLines(data, m)
		if tooLarge != (err != nil) {
			t.Fatalf("tooLarge=%v err=%v", tooLarge, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
		if err == nil && string(fr.Pending()) != pending {
			t.Fatalf("pending %q, want %q", fr.Pending(), pending)
		}
	})
}

func benchFramer(b *testing.B, lineLen, chunk int) {
	line := append(bytes.Repeat([]byte("x"), lineLen-1), '\n')
	data := bytes.Repeat(line, max(1, (4<<20)/lineLen))
	f := NewLineFramer(16 << 20)
	n := 0
	yield := func(l []byte) error { n += len(l); return nil }
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		for i := 0; i < len(data); i += chunk {
			if err := f.Push(data[i:min(i+chunk, len(data))], yield); err != nil {
				b.Fatal(err)
			}
		}
	}
	if n == 0 {
		b.Fatal("nothing framed")
	}
}

// Framer throughput: 4 MiB of lines pushed in 64 KiB chunks (the client's
// read size).
func BenchmarkLineFramer(b *testing.B) {
	for _, c := range []struct {
		name      string
		line, chk int
	}{
		{"line=256B", 256, 64 << 10},
		{"line=4KiB", 4 << 10, 64 << 10},
		{"line=1MiB", 1 << 20, 64 << 10},
	} {
		b.Run(c.name, func(b *testing.B) { benchFramer(b, c.line, c.chk) })
	}
}
