package termsafe

import "testing"

func TestText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{`C:\path`, `C:\path`},
		{"line\nclawkit: error: forged", `line\nclawkit: error: forged`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\\b\n", `a\\b\n`},
		{"evil\u202efdp.exe", `evil\u202efdp.exe`},
		{"tab\there", `tab\there`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"\u0085next", `\u0085next`},
		{"cr\roverwrite", `cr\roverwrite`},
		{"zero\u200bwidth", `zero\u200bwidth`},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if Safe(c.in) != (c.in == c.want) {
			t.Errorf("Safe(%q) = %v", c.in, Safe(c.in))
		}
	}
}

func FuzzText(f *testing.F) {
	f.Add("a\x1b[2Jb\n\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if !Safe(out) {
			t.Fatalf("Text(%q) = %q is not safe", s, out)
		}
	})
}
