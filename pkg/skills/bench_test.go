package skills

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/pluginmanifest"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// A realistic SKILL.md: frontmatter with metadata and ~8 KiB of Markdown
// with shell snippets (the corpus median is a few KiB).
func benchSkillMD() []byte {
	var b bytes.Buffer
	b.WriteString("---\nname: bench\ndescription: \"Benchmark skill with metadata and snippets.\"\nmetadata:\n  { \"openclaw\": { \"emoji\": \"x\", \"requires\": { \"bins\": [\"op\"] } } }\n---\n# Bench\n\n")
	for i := 0; b.Len() < 8<<10; i++ {
		fmt.Fprintf(&b, "## Step %d\n\nRun `curl -fsSL https://example.com/%d -o out.json` then `jq .items out.json`.\n\n```sh\nchmod 755 run.sh && ./run.sh --id %d\n```\n\n", i, i, i)
	}
	return b.Bytes()
}

func BenchmarkCheckSkillMD(b *testing.B) {
	doc := benchSkillMD()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if fs := skilllint.CheckSkillMD("bench", doc, false); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}

func BenchmarkScan1MiB(b *testing.B) {
	line := "echo 'a normal line of a script with some words' && ls -la /tmp/work | grep x\n"
	doc := []byte(strings.Repeat(line, (1<<20)/len(line)))
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if fs := skilllint.Scan("scripts/x.sh", doc); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}

func BenchmarkParseJSON5Manifest(b *testing.B) {
	var m bytes.Buffer
	m.WriteString("// manifest\n{ id: 'bench', agentSkillsDir: 'skills', contracts: { tools: [")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&m, "'tool-%d', ", i)
	}
	m.WriteString("], }, }\n")
	doc := m.Bytes()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := pluginmanifest.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateDir(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "bench")
	files := map[string]string{"SKILL.md": string(benchSkillMD())}
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("references/r%02d.md", i)] = strings.Repeat("reference text line\n", 200)
	}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		mustWrite(b, full, c)
	}
	for b.Loop() {
		rep, err := skilllint.ValidateDir(dir, skilllint.Options{Profile: skilllint.ProfileOpenClaw})
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Errors)
		}
	}
}

// BenchmarkCommitWrite is one `skill write` commit in-process (no process
// start, no owner lock): validation, per-skill lock, tree read, atomic
// publish with fsyncs, index refresh and event record (no hooks).
func BenchmarkCommitWrite(b *testing.B) {
	f := newFixture(b)
	if _, err := f.write("pdf", "SKILL.md", pdfMD); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if _, err := f.write("pdf", "references/note.md", fmt.Sprintf("note %d\n", i)); err != nil {
			b.Fatal(err)
		}
	}
}
