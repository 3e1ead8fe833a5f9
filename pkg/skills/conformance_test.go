package skills

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/skilllint"
)

// conformanceCases is the conformance table against the Agent Skills
// specification and its reference validator (skills-ref): for every rule
// the specification states explicitly, a case both must accept and one
// both must refuse. "refuse" means the skill fails validation under the
// spec profile (an error finding with the given rule). Fixtures are shaped
// like the public collections: LICENSE.txt, agents/, nested references,
// CJK text, flow-style lists, descriptions near each limit.
var conformanceCases = []struct {
	rule   string // the spec rule (the finding's rule id on refusal)
	name   string
	folder string
	files  map[string]string
	accept bool
}{
	// SKILL.md is required (either spelling the reference looks for).
	{skilllint.RuleSkillMDMissing, "skill.md present", "pdf", map[string]string{"SKILL.md": fm("pdf", "Fill PDF forms.")}, true},
	{skilllint.RuleSkillMDMissing, "lowercase skill.md accepted", "pdf", map[string]string{"skill.md": fm("pdf", "Fill PDF forms.")}, true},
	{skilllint.RuleSkillMDMissing, "no SKILL.md", "pdf", map[string]string{"README.md": "# pdf\n"}, false},
	// Frontmatter present and closed.
	{skilllint.RuleFrontmatter, "frontmatter present", "pdf", map[string]string{"SKILL.md": fm("pdf", "d")}, true},
	{skilllint.RuleFrontmatter, "no frontmatter", "pdf", map[string]string{"SKILL.md": "# PDF\n"}, false},
	{skilllint.RuleFrontmatter, "unterminated frontmatter", "pdf", map[string]string{"SKILL.md": "---\nname: pdf\ndescription: d\n"}, false},
	// YAML validity: a mapping, valid syntax.
	{skilllint.RuleYAML, "flow-style list value", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "allowed-tools: [Bash(git:*), Read]")}, true},
	{skilllint.RuleYAML, "block scalar description", "pdf", map[string]string{"SKILL.md": "---\nname: pdf\ndescription: >\n  Folded over\n  two lines.\n---\n"}, true},
	{skilllint.RuleYAML, "syntax error", "pdf", map[string]string{"SKILL.md": "---\nname: pdf\ndescription: [unclosed\n---\n"}, false},
	{skilllint.RuleYAML, "root is a list", "pdf", map[string]string{"SKILL.md": "---\n- name: pdf\n---\n"}, false},
	{skilllint.RuleYAML, "duplicate key", "pdf", map[string]string{"SKILL.md": "---\nname: pdf\nname: pdf\ndescription: d\n---\n"}, false},
	// name: required.
	{skilllint.RuleNameRequired, "name given", "pdf", map[string]string{"SKILL.md": fm("pdf", "d")}, true},
	{skilllint.RuleNameRequired, "name missing", "pdf", map[string]string{"SKILL.md": "---\ndescription: d\n---\n"}, false},
	{skilllint.RuleNameRequired, "name empty", "pdf", map[string]string{"SKILL.md": "---\nname: ''\ndescription: d\n---\n"}, false},
	// name: 1-64 characters.
	{skilllint.RuleNameLength, "name 64 characters", strings.Repeat("a", 64), map[string]string{"SKILL.md": fm(strings.Repeat("a", 64), "d")}, true},
	{skilllint.RuleNameLength, "name 65 characters", strings.Repeat("a", 65), map[string]string{"SKILL.md": fm(strings.Repeat("a", 65), "d")}, false},
	{skilllint.RuleNameLength, "name 64 non-ASCII characters (128 bytes)", strings.Repeat("é", 64), map[string]string{"SKILL.md": fm(strings.Repeat("é", 64), "d")}, true},
	// name: lowercase.
	{skilllint.RuleNameCase, "lowercase name", "pdf-processing", map[string]string{"SKILL.md": fm("pdf-processing", "d")}, true},
	{skilllint.RuleNameCase, "uppercase name", "PDF-Processing", map[string]string{"SKILL.md": fm("PDF-Processing", "d")}, false},
	// name: letters, digits and hyphens (Unicode lowercase letters too).
	{skilllint.RuleNameCharset, "non-ASCII lowercase letters", "données", map[string]string{"SKILL.md": fm("données", "d")}, true},
	{skilllint.RuleNameCharset, "CJK name", "技能", map[string]string{"SKILL.md": fm("技能", "d")}, true},
	{skilllint.RuleNameCharset, "digits", "v2-tools", map[string]string{"SKILL.md": fm("v2-tools", "d")}, true},
	{skilllint.RuleNameCharset, "underscore", "pdf_tools", map[string]string{"SKILL.md": fm("pdf_tools", "d")}, false},
	{skilllint.RuleNameCharset, "dot", "pdf.tools", map[string]string{"SKILL.md": fm("pdf.tools", "d")}, false},
	// name: no leading, trailing or consecutive hyphen.
	{skilllint.RuleNameHyphen, "inner hyphens", "a-b-c", map[string]string{"SKILL.md": fm("a-b-c", "d")}, true},
	{skilllint.RuleNameHyphen, "leading hyphen", "-pdf", map[string]string{"SKILL.md": fm("-pdf", "d")}, false},
	{skilllint.RuleNameHyphen, "trailing hyphen", "pdf-", map[string]string{"SKILL.md": fm("pdf-", "d")}, false},
	{skilllint.RuleNameHyphen, "double hyphen", "pdf--tools", map[string]string{"SKILL.md": fm("pdf--tools", "d")}, false},
	// name: equal to the folder.
	{skilllint.RuleNameFolder, "name equals folder", "code-review", map[string]string{"SKILL.md": fm("code-review", "d")}, true},
	{skilllint.RuleNameFolder, "name differs from folder", "code-review", map[string]string{"SKILL.md": fm("review", "d")}, false},
	// description: required, non-empty.
	{skilllint.RuleDescRequired, "description given", "pdf", map[string]string{"SKILL.md": fm("pdf", "Extract text. Use for PDFs.")}, true},
	{skilllint.RuleDescRequired, "description missing", "pdf", map[string]string{"SKILL.md": "---\nname: pdf\n---\n"}, false},
	{skilllint.RuleDescRequired, "description blank", "pdf", map[string]string{"SKILL.md": fm("pdf", `"   "`)}, false},
	// description: at most 1,024 characters (not bytes).
	{skilllint.RuleDescLength, "description 1024 ASCII characters", "pdf", map[string]string{"SKILL.md": fm("pdf", strings.Repeat("a", 1024))}, true},
	{skilllint.RuleDescLength, "description 1017 characters in 1030 bytes", "pdf", map[string]string{"SKILL.md": fm("pdf", strings.Repeat("a", 1004)+strings.Repeat("é", 13))}, true},
	{skilllint.RuleDescLength, "description 400 CJK characters (1200 bytes)", "pdf", map[string]string{"SKILL.md": fm("pdf", strings.Repeat("文", 400))}, true},
	{skilllint.RuleDescLength, "description 1025 characters", "pdf", map[string]string{"SKILL.md": fm("pdf", strings.Repeat("a", 1025))}, false},
	{skilllint.RuleDescLength, "description 1025 CJK characters", "pdf", map[string]string{"SKILL.md": fm("pdf", strings.Repeat("文", 1025))}, false},
	// compatibility: at most 500 characters.
	{skilllint.RuleCompatLength, "compatibility 500 characters", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "compatibility: "+strings.Repeat("x", 500))}, true},
	{skilllint.RuleCompatLength, "compatibility 500 CJK characters", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "compatibility: "+strings.Repeat("需", 500))}, true},
	{skilllint.RuleCompatLength, "compatibility 501 characters", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "compatibility: "+strings.Repeat("x", 501))}, false},
	{skilllint.RuleCompatLength, "compatibility 600 characters", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "compatibility: "+strings.Repeat("x", 600))}, false},
	// allowed-tools: a string or a list of strings.
	{skilllint.RuleFieldType, "allowed-tools string", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "allowed-tools: Bash(git:*) Read")}, true},
	{skilllint.RuleFieldType, "allowed-tools block list", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "allowed-tools:\n  - Bash(jq:*)\n  - Read")}, true},
	{skilllint.RuleFieldType, "allowed-tools mapping", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "allowed-tools: {Bash: yes}")}, false},
	// compatibility must be a string.
	{skilllint.RuleFieldType, "compatibility list", "pdf", map[string]string{"SKILL.md": fm("pdf", "d", "compatibility: [linux, mac]")}, false},
	// Any other files and folders may be in a skill folder.
	{skilllint.RuleFileLocation, "collection-shaped folder", "pdf", map[string]string{
		"SKILL.md":                         fm("pdf", "Fill PDF forms. 填写表格。", "license: Proprietary. LICENSE.txt has complete terms", "metadata:\n  author: example-org\n  version: \"1.0\""),
		"LICENSE.txt":                      "All rights reserved.\n",
		"README.md":                        "# pdf\n",
		"reference.md":                     "# Reference\n",
		"forms.md":                         "# Forms\n",
		"agents/openai.yaml":               "interface:\n  display_name: PDF\n",
		"references/api/deep/endpoints.md": "# Endpoints\n",
		"scripts/fill.py":                  "print('ok')\n",
		"bin/tool":                         "#!/bin/sh\necho ok\n",
	}, true},
}

func fm(name, desc string, extra ...string) string {
	s := "---\nname: " + name + "\ndescription: " + desc + "\n"
	for _, e := range extra {
		s += e + "\n"
	}
	return s + "---\n# Body\n"
}

func TestConformanceTable(t *testing.T) {
	rules := map[string][2]int{}
	for _, c := range conformanceCases {
		t.Run(c.rule+"/"+c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.folder)
			writeTree(t, dir, c.files)
			rep, err := skilllint.ValidateDir(dir, skilllint.Options{Profile: skilllint.ProfileSpec})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != c.accept {
				t.Fatalf("ok=%v, want %v: errors %v", rep.OK, c.accept, rep.Errors)
			}
			if !c.accept {
				found := false
				for _, f := range rep.Errors {
					found = found || f.Rule == c.rule
				}
				if !found {
					t.Fatalf("refused, but not by rule %s: %v", c.rule, rep.Errors)
				}
			}
		})
		n := rules[c.rule]
		if c.accept {
			n[0]++
		} else {
			n[1]++
		}
		rules[c.rule] = n
	}
	// Every explicit rule has at least one case each way (file-location is
	// a permission: there is nothing the spec refuses there).
	for rule, n := range rules {
		if n[0] == 0 || (n[1] == 0 && rule != skilllint.RuleFileLocation) {
			t.Errorf("rule %s: %d accept and %d refuse cases; want at least one of each", rule, n[0], n[1])
		}
	}
	t.Logf("conformance table: %d cases over %d rules", len(conformanceCases), len(rules))
}
