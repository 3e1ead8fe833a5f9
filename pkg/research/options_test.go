package research

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

func TestDecodeStartOptions(t *testing.T) {
	in := `{"request":{"version":2,"action":"start","question":"q","plan":true,"followUp":{"handle":"v1_x"},
"inputs":[{"path":"/tmp/a.pdf"}],"tools":{"fileSearch":["fileSearchStores/s"],"urlContext":true,
"mcpServers":[{"name":"m","url":"https://mcp.example.com","headers":[{"header":"Authorization","profile":"mcp:t"}]}]},
"visualization":"auto"},"sessionKey":"s","agentId":"a"}`
	rpc, err := DecodeRPC([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	r := rpc.Request
	if !r.Plan || r.FollowUp.Handle != "v1_x" || r.Inputs[0].Path != "/tmp/a.pdf" || r.Visualization != "auto" ||
		r.Tools.MCPServers[0].Headers[0].Profile != "mcp:t" || !r.Tools.URLContext {
		t.Fatalf("%+v", r)
	}
	p := rpcStart(Caller{AgentID: "a", SessionKey: "s"}, r)
	if !p.Plan || p.FollowUp.Handle != "v1_x" || p.Inputs.Specs()[0].Path != "/tmp/a.pdf" || p.Tools == nil || p.Visualization != "auto" {
		t.Fatalf("%+v", p)
	}
	start := func(fields string) string {
		return `{"request":{"version":2,"action":"start","question":"q",` + fields + `},"sessionKey":"s","agentId":"a"}`
	}
	rejects := map[string]errs.Code{
		start(`"plan":"yes"`):                                         "invalid_field",
		start(`"followUp":{"job":"rj_x"}`):                            "unknown_field",
		start(`"followUp":{"handle":"a/b"}`):                          "invalid_field",
		start(`"inputs":[{"path":"rel.pdf"}]`):                        "invalid_input",
		start(`"inputs":[{"path":"/a","x":1}]`):                       "unknown_field",
		start(`"inputs":"/a"`):                                        "invalid_field",
		start(`"inputs":[{"path":"/a.pdf","pages":"5-2"}]`):           "invalid_range",
		start(`"inputs":[{"path":"/a.xlsx","sheet":"0"}]`):            "invalid_range",
		start(`"inputs":[{"path":"/a.pdf","pages":"1","sheet":"1"}]`): "invalid_range",
		start(`"keepUploads":"yes"`):                                  "invalid_field",
		start(`"visualization":"always"`):                             "invalid_visualization",
		start(`"visualization":""`):                                   "invalid_field",
		start(`"tools":{"googleSearch":true}`):                        "unknown_field",
		start(`"tools":{"mcpServers":[{"name":"m","url":"https://x","headers":[{"header":"A","value":"secret"}]}]}`): "unknown_field",
		start(`"tools":{"mcpServers":[{"name":"m","url":"https://x?key=abc"}]}`):                                     "secret_in_url",
		start(`"tools":{"mcpServers":[{"name":"m","url":"ftp://x"}]}`):                                               "invalid_tool",
		start(`"tools":{"fileSearch":["a b"]}`):                                                                      "invalid_tool",
		start(`"inputs":[` + strings.Repeat(`{"path":"/a"},`, MaxInputs) + `{"path":"/b"}]`):                         "too_many_inputs",
		start(`"temperature":1`): "unknown_field",
		`{"request":{"version":1,"action":"poll","handle":"h","plan":true},"sessionKey":"s","agentId":"a"}`: "unknown_field",
	}
	for in, code := range rejects {
		_, err := DecodeRPC([]byte(in))
		if errs.CodeOf(err) != code || errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%s: got %v (%s), want %s", in, err, errs.CodeOf(err), code)
		}
		// A secret given where a profile belongs is never echoed.
		if err != nil && strings.Contains(err.Error(), "secret") && strings.Contains(in, `"value":"secret"`) {
			t.Errorf("%s: the value is echoed: %v", in, err)
		}
	}
}

func TestToolsFromFlags(t *testing.T) {
	tools, err := ToolsFromFlags([]string{"fileSearchStores/s"}, true, []string{"m=https://mcp.example.com/mcp"}, []string{"m:Authorization=@mcp:tok"})
	if err != nil {
		t.Fatal(err)
	}
	if tools.MCPServers[0].Headers[0] != (HeaderRef{Header: "Authorization", Profile: "mcp:tok"}) {
		t.Fatalf("%+v", tools)
	}
	for _, c := range []struct {
		servers, headers []string
		code             errs.Code
	}{
		{[]string{"m=https://x"}, []string{"m:Authorization=Bearer-s3cr3t-value"}, "header_value_literal"},
		{[]string{"m=https://x"}, []string{"n:Authorization=@p"}, "invalid_tool"},
		{[]string{"m"}, nil, "invalid_tool"},
		{[]string{"m=https://u:pw@x"}, nil, "secret_in_url"},
		{[]string{"m=https://x", "m=https://y"}, nil, "invalid_tool"},
		{[]string{"m=https://x"}, []string{"m:Bad Header=@p"}, "invalid_tool"},
	} {
		// The flags' own shape is ToolsFromFlags'; the tools' rules are
		// the start's Check's (checkTools), which the CLI's call runs next.
		tools, err := ToolsFromFlags(nil, false, c.servers, c.headers)
		if err == nil {
			_, err = checkStartParams(StartParams{Question: "q", Tools: tools})
		}
		if errs.CodeOf(err) != c.code {
			t.Errorf("%v %v: %v, want %s", c.servers, c.headers, err, c.code)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), ":pw@")) {
			t.Errorf("secret echoed: %v", err)
		}
	}
}

func TestSniffMIME(t *testing.T) {
	cases := map[string]string{
		"%PDF-1.7\n%âãÏÓ\n":                "application/pdf",
		"name,age\nada,36\nalan,41\n":      "text/csv",
		"just some text\nwithout commas\n": "",
		"II*\x00\x08\x00\x00\x00":          "image/tiff",
		"\x00\x00\x00\x18ftypheic\x00\x00": "image/heic",
		"\x00\x00\x00\x18ftypmif1\x00\x00": "image/heif",
		"\x00\x00\x00\x18ftypisom\x00\x00": "",
		"GIF89a\x01\x00":                   "image/gif",
		"BM\x00\x00":                       "image/bmp",
		"<html><body>x</body></html>":      "",
		"\x7fELF\x02\x01":                  "",
		string(fakeapi.FigurePNGs()[0]):    "image/png",
		"\xff\xd8\xff\xe0\x00\x10JFIF\x00": "image/jpeg",
		"RIFF\x00\x00\x00\x00WEBPVP8 ":     "image/webp",
	}
	for in, want := range cases {
		if got := SniffMIME([]byte(in), false); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzSniffMIME: any bytes are a type of the SDK enums or nothing.
func FuzzSniffMIME(f *testing.F) {
	for _, s := range []string{"%PDF-1.4", "a,b\n1,2\n", "II*\x00", "\x00\x00\x00\x18ftypheic", string(fakeapi.FigurePNGs()[0])} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, prefix bool) {
		m := SniffMIME(data, prefix)
		if m != "" && google.PartType(m) == "" {
			t.Fatalf("%q is not a type the SDK enums name", m)
		}
	})
}

func TestInputsReadOnceAndBounded(t *testing.T) {
	dir := t.TempDir()
	pdf := filepath.Join(dir, "report.csv") // a PDF whatever its name
	if err := os.WriteFile(pdf, []byte("%PDF-1.4\nbody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pdf")
	if err := os.Symlink(pdf, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pdf")
	if err := os.WriteFile(big, append([]byte("%PDF-1.4\n"), make([]byte, MaxInputBytes)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := probeInputs(checked(t, pdf)); err != nil {
		t.Fatal(err)
	}
	ins, err := readInputs(checked(t, pdf))
	if err != nil || ins[0].rec.MimeType != "application/pdf" || ins[0].rec.Name != "report.csv" || ins[0].rec.Size != 14 || len(ins[0].rec.SHA256) != 64 {
		t.Fatalf("%+v %v", ins, err)
	}
	if b, _ := json.Marshal(ins[0].rec); strings.Contains(string(b), "body") {
		t.Fatal("the record holds the bytes")
	}
	for path, code := range map[string]errs.Code{link: "input_unreadable", filepath.Join(dir, "none"): "input_unreadable", dir: "input_unreadable"} {
		if err := probeInputs(checked(t, path)); errs.CodeOf(err) != code {
			t.Errorf("admit %s: %v, want %s", path, err, code)
		}
		if _, err := readInputs(checked(t, path)); errs.CodeOf(err) != code {
			t.Errorf("read %s: %v, want %s", path, err, code)
		}
	}
	// Over the per-file inline bound: uploaded, not read here.
	ins, err = readInputs(checked(t, big))
	if err != nil || !ins[0].rec.Upload || ins[0].data != nil || ins[0].rec.SHA256 != "" {
		t.Fatalf("big: %+v %v", ins, err)
	}
	// Over the total inline bound: the files that no longer fit are
	// uploaded, in order.
	var many []string
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, "part"+string(rune('a'+i))+".pdf")
		if err := os.WriteFile(p, append([]byte("%PDF-1.4\n"), make([]byte, MaxInputBytes-100)...), 0o600); err != nil {
			t.Fatal(err)
		}
		many = append(many, p)
	}
	plan, err := planInputs(checked(t, many...))
	if err != nil || plan[0].upload || plan[1].upload || plan[2].upload || !plan[3].upload {
		t.Fatalf("total: %+v %v", plan, err)
	}
}

func checked(t testing.TB, paths ...string) InputList {
	t.Helper()
	var specs []InputSpec
	for _, p := range paths {
		specs = append(specs, InputSpec{Path: p})
	}
	l, err := checkInputList(AskInputs(specs...))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A header's value comes from a profile of one of auth's header kinds,
// the same ones mcp --header reads: header as is, bearer as "Bearer
// TOKEN"; any other kind is refused (header_profile_wrong_kind).
func TestResolveToolsHeaderKinds(t *testing.T) {
	home := t.TempDir()
	creds, err := auth.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []auth.Profile{
		{ID: "mcp:raw", Provider: "mcp", Kind: auth.KindHeader, Secret: "Token raw-secret-1"},
		{ID: "mcp:tok", Provider: "mcp", Kind: auth.KindBearer, Secret: "tok-secret-2"},
		{ID: "google:default", Provider: "google", Kind: auth.KindAPIKey, Secret: "key-secret-3"},
	} {
		if err := creds.Add(p, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := creds.Save(); err != nil {
		t.Fatal(err)
	}
	tools := &Tools{MCPServers: []MCPServer{{Name: "s", URL: "https://mcp.example.com/mcp", Headers: []HeaderRef{
		{Header: "X-Raw", Profile: "mcp:raw"}, {Header: "Authorization", Profile: "mcp:tok"},
	}}}}
	out, secrets, err := resolveTools(home, tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].MCPServer == nil {
		t.Fatalf("tools %+v", out)
	}
	h := out[0].MCPServer.Headers
	if h["X-Raw"] != "Token raw-secret-1" || h["Authorization"] != "Bearer tok-secret-2" {
		t.Fatalf("headers %q", h)
	}
	if strings.Join(secrets, ",") != "Token raw-secret-1,tok-secret-2" {
		t.Fatalf("secrets %q", secrets)
	}
	tools.MCPServers[0].Headers = []HeaderRef{{Header: "Authorization", Profile: "google:default"}}
	_, _, err = resolveTools(home, tools)
	if errs.CodeOf(err) != CodeHeaderProfileWrongKind || strings.Contains(err.Error(), "key-secret-3") {
		t.Fatalf("an api-key profile: %v", err)
	}
}
