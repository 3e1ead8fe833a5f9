package skilllint

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Scan rule ids. Each finding of the security scan names one of them, the
// file and the 1-based line, so a reviewer can jump to it.
const (
	RuleSecretLiteral = "secret-literal"      // provider key shapes
	RulePrivateKey    = "private-key"         // PEM/OpenSSH/PGP private key blocks
	RulePipeToShell   = "pipe-to-shell"       // curl|wget output run by a shell
	RuleExfiltration  = "secret-exfiltration" // env dumps or key files sent over the network
	RuleDestructive   = "destructive-delete"  // recursive rm of /, ~, $HOME or a system folder
	RuleWorldWritable = "world-writable"      // chmod granting write to others
	RuleHiddenUnicode = "hidden-unicode"      // bidi controls and zero-width characters
	RuleBinary        = "binary-content"      // NUL bytes or invalid UTF-8 in a text file
	// RulePromptInjection: wording that tells the agent to ignore its
	// instructions, names hidden prompt layers, or asks to run tools
	// without approval (OpenClaw 2026.8 and 2026.9.5 refuse it; see
	// scan_openclaw.go).
	RulePromptInjection = "prompt-injection"
)

// Rules lists every scan rule, for documentation and tests.
var Rules = []string{RuleSecretLiteral, RulePrivateKey, RulePipeToShell, RuleExfiltration,
	RuleDestructive, RuleWorldWritable, RuleHiddenUnicode, RuleBinary, RulePromptInjection}

// secretShapes are the provider key formats we recognise. Each needs at
// least one digit in the match (real keys are random; prose such as
// "sk-your-key-goes-here" is not) and is skipped when it looks like a
// documented placeholder (see isPlaceholder).
//
// Each shape has literal trigger substrings: the regexp only runs on lines
// that contain one, which keeps the scan fast on ordinary text.
var secretShapes = []struct {
	name     string
	triggers []string
	re       *lazyRe
}{
	{"AWS access key id", []string{"AKIA", "ASIA"}, lazyRegexp(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"Anthropic API key", []string{"sk-ant-"}, lazyRegexp(`\bsk-ant-[A-Za-z0-9_-]{32,}`)},
	{"OpenAI-style secret key", []string{"sk-"}, lazyRegexp(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9][A-Za-z0-9_-]{30,}`)},
	{"GitHub token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, lazyRegexp(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b`)},
	{"GitHub fine-grained token", []string{"github_pat_"}, lazyRegexp(`\bgithub_pat_[A-Za-z0-9_]{50,}\b`)},
	{"GitLab token", []string{"glpat-"}, lazyRegexp(`\bglpat-[A-Za-z0-9_-]{20,}\b`)},
	{"Google API key", []string{"AIza"}, lazyRegexp(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"Google OAuth access token", []string{"ya29."}, lazyRegexp(`\bya29\.[0-9A-Za-z_-]{30,}`)},
	{"Slack token", []string{"xox"}, lazyRegexp(`\bxox[abposr]-[0-9]{6,}-[A-Za-z0-9-]{8,}`)},
	{"Stripe live key", []string{"_live_"}, lazyRegexp(`\b(?:sk|rk)_live_[0-9A-Za-z]{20,}\b`)},
	{"npm token", []string{"npm_"}, lazyRegexp(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"Hugging Face token", []string{"hf_"}, lazyRegexp(`\bhf_[A-Za-z0-9]{34,}\b`)},
}

// netTriggers are substrings one of which every exfiltration pattern needs.
var netTriggers = []string{"curl", "wget", "nc ", "ncat", "netcat", "socat", "telnet", "scp", "rsync", "ftp"}

// pipeOps[i] are the operators pipeRes[i] needs (one of them).
var pipeOps = [][]string{{"|"}, {"$(", "`"}, {"<("}}

// exfilTriggers: every exfiltration pattern names the environment or a key
// file, so one of these substrings must be on the line.
var exfilTriggers = []string{"env", "export", ".ssh", "id_", ".aws", ".netrc", ".npmrc", ".pgpass", ".kube",
	"gcloud", ".docker", ".git-credentials", "shadow", ".gnupg"}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

var (
	privateKeyRe = lazyRegexp(`-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----`)

	shellName = `(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?(?:/usr)?(?:/bin/)?(?:ba|z|k|da)?sh\b`
	pipeRes   = []*lazyRe{
		// curl … | sh, wget -qO- … | sudo bash
		lazyRegexp(`\b(?:curl|wget)\b[^\n|]*\|\s*` + shellName),
		// sh -c "$(curl …)", bash -c "`wget …`"
		lazyRegexp(`\b(?:ba|z|k|da)?sh\s+(?:-\S+\s+)*["']?(?:\$\(|` + "`" + `)\s*(?:curl|wget)\b`),
		// bash <(curl …)
		lazyRegexp(`\b(?:ba|z|k|da)?sh\s+<\(\s*(?:curl|wget)\b`),
	}

	netTool  = `\b(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|rsync|ftp|sftp)\b`
	keyFiles = `(?:~/\.ssh/|\$\{?HOME\}?/\.ssh/|\.ssh/id_|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pgpass\b|\.kube/config|\.config/gcloud/|\.docker/config\.json|\.git-credentials|/etc/shadow|\.gnupg/|(?:^|[\s/"'=@<])\.env\b)`
	exfilRes = []*lazyRe{
		// env | curl …, printenv | base64 | nc host 80
		lazyRegexp(`\b(?:env|printenv|export\s+-p)\s*(?:\|[^|\n]*)?\|\s*(?:sudo\s+)?` + netTool),
		// cat ~/.ssh/id_rsa | curl …, tar c ~/.aws/credentials | nc …
		lazyRegexp(keyFiles + `[^\n|]*\|[^\n]*` + netTool),
		// curl -d @~/.ssh/id_rsa …, curl -F f=@.env …, wget --post-file=~/.netrc
		lazyRegexp(`\b(?:curl|wget)\b[^\n]*(?:-d|--data[a-z-]*|-F|--form|-T|--upload-file|--post-file|--body-file)[=\s]+["']?[^\s"']*@?` + keyFiles),
		// curl … "$(env)" / "$(cat ~/.ssh/id_rsa)" / $(printenv)
		lazyRegexp(netTool + `[^\n]*\$\(\s*(?:env|printenv|cat\s+[^)]*` + keyFiles + `)`),
		lazyRegexp(`\$\(\s*(?:env|printenv|cat\s+[^)]*` + keyFiles + `)[^\n]*` + netTool),
	}
)

// dangerousTargets are rm targets that wipe a home or the system.
var dangerousTargets = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range []string{"/", "~", "$HOME", "${HOME}", "/bin", "/boot", "/dev", "/etc", "/home",
		"/lib", "/lib64", "/opt", "/root", "/sbin", "/srv", "/usr", "/var", "/System", "/Users", "/Library", "/Applications"} {
		m[t] = true
		m[strings.TrimSuffix(t, "/")+"/"] = true
		m[strings.TrimSuffix(t, "/")+"/*"] = true
		m[strings.TrimSuffix(t, "/")+"/.*"] = true
	}
	return m
}()

// textExts are support-file extensions scanned as text. Files without an
// extension are text unless they sit below assets/; other extensions are
// opaque (size limits only).
var textExts = map[string]bool{
	".md": true, ".markdown": true, ".txt": true, ".rst": true, ".adoc": true,
	".sh": true, ".bash": true, ".zsh": true, ".fish": true, ".ps1": true, ".bat": true, ".cmd": true,
	".py": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true, ".tsx": true, ".jsx": true,
	".rb": true, ".pl": true, ".lua": true, ".go": true, ".rs": true, ".java": true, ".kt": true, ".swift": true,
	".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".php": true, ".r": true, ".sql": true,
	".json": true, ".json5": true, ".jsonl": true, ".yaml": true, ".yml": true, ".toml": true, ".ini": true,
	".cfg": true, ".conf": true, ".env": true, ".xml": true, ".html": true, ".htm": true, ".css": true,
	".csv": true, ".tsv": true, ".svg": true, ".tmpl": true, ".tpl": true, ".j2": true, ".hbs": true,
	".mustache": true, ".applescript": true, ".scpt": false, ".graphql": true, ".proto": true, ".diff": true,
	".patch": true, ".mdx": true, ".vue": true, ".svelte": true,
}

// IsTextFile reports whether a skill file (a normalized path) is scanned as
// text.
func IsTextFile(p string) bool {
	if p == SkillFile {
		return true
	}
	ext := strings.ToLower(path.Ext(path.Base(p)))
	if ext == "" {
		return !strings.HasPrefix(p, "assets/")
	}
	return textExts[ext]
}

// Scan runs the security scan over one text file's content. file is the
// skill-relative path used in findings.
//
// Each finding keeps its rule wherever it is, but its severity follows
// the context (the rule table is in docs/skills.md):
//   - a secret that looks like a placeholder (a documented example key,
//     EXAMPLE/PLACEHOLDER/YOUR words, 1234/abcd runs, xxxx runs) is a
//     warning; a real-looking key is an error, also in a code block;
//   - a private-key header without a key body on the next line (a write-up
//     naming the format) is a warning; a header followed by key material
//     is an error;
//   - a pipe-to-shell line in Markdown (an installer line in documentation,
//     fenced or not) is a warning; in a script it is an error.
//
// Everything else is an error. Then the floor (scan_openclaw.go) applies:
// whatever a supported OpenClaw release's own scanner marks critical is an
// error whatever the context above said, and what it warns about is at
// least a warning.
func Scan(file string, content []byte) []Finding {
	return applyFloor(file, content, scanOwn(file, content))
}

// scanOwn is clawkit's own line rules.
func scanOwn(file string, content []byte) []Finding {
	var out []Finding
	md := isMarkdown(file)
	inFence := false
	var s string // the line being scanned
	// add reports a finding at byte at of the line (-1: no column).
	add := func(sev, rule string, line, at int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if inFence {
			msg += " (in a fenced code block)"
		}
		out = append(out, Finding{Severity: sev, Code: CodeUnsafe, Rule: rule, File: file, Line: line, Column: column(s, at), Message: msg})
	}
	content = bytes.TrimPrefix(content, bom)
	line := 0
	for len(content) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			l, content = content[:i], content[i+1:]
		} else {
			l, content = content, nil
		}
		s = ""
		if i := bytes.IndexByte(l, 0); i >= 0 {
			add(SeverityError, RuleBinary, line, -1, "NUL byte in a text file")
			continue // the rest of a binary line is noise
		}
		if !utf8.Valid(l) {
			add(SeverityError, RuleBinary, line, -1, "invalid UTF-8 in a text file")
			continue
		}
		s = string(l)
		if md && isFenceLine(s) {
			inFence = !inFence
			continue
		}
		if !isASCII(l) {
			if r, ok := hiddenRune(s); ok {
				add(SeverityError, RuleHiddenUnicode, line, strings.IndexRune(s, r), "hidden character U+%04X (bidi control or zero-width) can make text read differently than it runs", r)
			}
		}
		for _, sh := range secretShapes {
			if !containsAny(s, sh.triggers) {
				continue
			}
			if ms := sh.re.FindAllString(s, -1); len(ms) > 0 {
				real := ""
				for _, m := range ms {
					if !isPlaceholder(m) {
						real = m
						break
					}
				}
				if real != "" {
					add(SeverityError, RuleSecretLiteral, line, strings.Index(s, real), "literal %s (%s…); keep secrets out of skills and read them from the environment", sh.name, redact(real))
				} else {
					add(SeverityWarning, RuleSecretLiteral, line, strings.Index(s, ms[0]), "placeholder-shaped %s (%s…); if it is a real key, remove it and rotate it", sh.name, redact(ms[0]))
				}
				break
			}
		}
		if strings.Contains(s, "PRIVATE KEY") && privateKeyRe.MatchString(s) {
			if keyBodyFollows(content) {
				add(SeverityError, RulePrivateKey, line, strings.Index(s, "-----BEGIN"), "private key block; never ship keys in a skill")
			} else {
				add(SeverityWarning, RulePrivateKey, line, strings.Index(s, "-----BEGIN"), "private key header without a key body (documentation?); never ship keys in a skill")
			}
		}
		if strings.Contains(s, "curl") || strings.Contains(s, "wget") {
			// Each pipe-to-shell form needs its own operator on the line.
			for i, op := range pipeOps {
				if containsAny(s, op) && pipeRes[i].MatchString(s) {
					at := pipeRes[i].index(s)
					if md {
						add(SeverityWarning, RulePipeToShell, line, at, "an installer line pipes downloaded code into a shell; prefer download, verify, then run")
					} else {
						add(SeverityError, RulePipeToShell, line, at, "downloaded code is piped into a shell; download, verify and then run it, or use a package manager")
					}
					break
				}
			}
		}
		if containsAny(s, netTriggers) && containsAny(s, exfilTriggers) {
			for _, re := range exfilRes {
				if re.MatchString(s) {
					add(SeverityError, RuleExfiltration, line, re.index(s), "environment or key files are sent over the network")
					break
				}
			}
		}
		if strings.Contains(s, "rm") {
			if t, ok := destructiveRm(s); ok {
				add(SeverityError, RuleDestructive, line, strings.Index(s, "rm"), "recursive delete of %s", t)
			}
		}
		if strings.Contains(s, "chmod") {
			if m, ok := worldWritable(s); ok {
				add(SeverityError, RuleWorldWritable, line, strings.Index(s, "chmod"), "chmod %s makes files writable by every user", m)
			}
		}
	}
	return out
}

func isMarkdown(file string) bool {
	switch strings.ToLower(path.Ext(file)) {
	case ".md", ".markdown", ".mdx":
		return true
	}
	return false
}

// isFenceLine reports a Markdown code fence: ``` or ~~~ after at most three
// spaces.
func isFenceLine(s string) bool {
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 {
		return false
	}
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// keyBodyFollows reports whether the text after a private-key header
// starts with key material: PEM headers (Proc-Type:) or a base64 line of
// at least 40 characters.
func keyBodyFollows(rest []byte) bool {
	next, _, _ := cutLine(rest)
	t := strings.TrimSpace(string(next))
	if strings.HasPrefix(t, "Proc-Type:") || strings.HasPrefix(t, "Comment:") || strings.HasPrefix(t, "Version:") {
		return true
	}
	if len(t) < 40 {
		return false
	}
	for _, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// hiddenRune finds a bidi control or zero-width character. A zero-width
// joiner/non-joiner between two non-ASCII characters is allowed: it is how
// emoji sequences and several scripts (Persian, Indic) are written.
func hiddenRune(s string) (rune, bool) {
	var prev rune
	for i, r := range s {
		if isHiddenFormat(r) {
			if r == 0x200c || r == 0x200d {
				next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
				if prev >= 0x80 && next >= 0x80 && !isHiddenFormat(prev) && !isHiddenFormat(next) {
					prev = r
					continue
				}
			}
			return r, true
		}
		prev = r
	}
	return 0, false
}

// wellKnownExamples are keys the providers publish in their own
// documentation.
var wellKnownExamples = []string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}

// isPlaceholder reports documentation keys: the providers' published
// examples, matches without digits, placeholder words, runs of one
// character (sk-xxxxxxxx…), and ascending sequences such as 1234 or
// abcd in the digits or letters of the key (A1B2C3D4… is 1234 and ABCD):
// real keys are random.
func isPlaceholder(m string) bool {
	for _, w := range wellKnownExamples {
		if strings.Contains(m, w) {
			return true
		}
	}
	if !strings.ContainsAny(m, "0123456789") {
		return true
	}
	u := strings.ToUpper(m)
	for _, w := range []string{"EXAMPLE", "PLACEHOLDER", "YOUR", "REDACTED", "DUMMY", "FAKE", "SAMPLE", "XXXX"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	run, last := 0, rune(0)
	var digits, letters strings.Builder
	for _, r := range m {
		if r == last {
			run++
			if run >= 6 {
				return true
			}
		} else {
			run, last = 1, r
		}
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
		case r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
			letters.WriteRune(r)
		}
	}
	return ascending(digits.String(), 4) || ascending(strings.ToUpper(letters.String()), 5)
}

// ascending reports a run of n consecutive ascending characters (1234,
// ABCDE) in s.
func ascending(s string, n int) bool {
	run := 1
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1]+1 {
			run++
			if run >= n {
				return true
			}
		} else {
			run = 1
		}
	}
	return false
}

func redact(m string) string {
	if len(m) > 8 {
		return m[:8]
	}
	return m
}

func unquote(t string) string {
	return strings.Trim(t, `"'`)
}

// commandArgs finds each occurrence of cmd as a word (preceded by the
// start of the line or one of before, followed by white space) and returns
// the white-space separated words after it. It replaces a regexp with
// capture groups, which was the scan's hot spot.
func commandArgs(s, cmd, before string) [][]string {
	var out [][]string
	for i := 0; ; {
		j := strings.Index(s[i:], cmd)
		if j < 0 {
			return out
		}
		at := i + j
		end := at + len(cmd)
		i = end
		if at > 0 && !strings.ContainsRune(before, rune(s[at-1])) {
			continue
		}
		if end >= len(s) || (s[end] != ' ' && s[end] != '\t') {
			continue
		}
		out = append(out, strings.Fields(s[end:]))
	}
}

// destructiveRm finds `rm` with a recursive flag and a target that is /,
// a home folder or a top-level system folder.
func destructiveRm(s string) (string, bool) {
	for _, args := range commandArgs(s, "rm", "\t ;&|(`") {
		recursive := false
		var targets []string
		for _, tok := range args {
			if tok == ";" || tok == "&&" || tok == "||" || tok == "|" || strings.HasPrefix(tok, "#") {
				break
			}
			tok = strings.TrimRight(tok, ";&|)`")
			switch {
			case tok == "--recursive":
				recursive = true
			case strings.HasPrefix(tok, "--"):
			case strings.HasPrefix(tok, "-") && len(tok) > 1:
				if strings.ContainsAny(tok[1:], "rR") {
					recursive = true
				}
			default:
				targets = append(targets, unquote(tok))
			}
		}
		if !recursive {
			continue
		}
		for _, t := range targets {
			if dangerousTargets[t] {
				return t, true
			}
		}
	}
	return "", false
}

// worldWritable finds chmod with a numeric mode granting write to others
// (last digit 2, 3, 6 or 7) or a symbolic mode adding w for o or a.
func worldWritable(s string) (string, bool) {
	for _, args := range commandArgs(s, "chmod", "\t ;&|(`") {
		for _, tok := range args {
			if strings.HasPrefix(tok, "-") && !isSymbolicMode(tok) {
				continue // -R, --recursive, ...
			}
			tok = unquote(strings.TrimRight(tok, ";&|)`"))
			if isNumericMode(tok) {
				if d := tok[len(tok)-1]; d == '2' || d == '3' || d == '6' || d == '7' {
					return tok, true
				}
				break
			}
			if isSymbolicMode(tok) {
				for _, clause := range strings.Split(tok, ",") {
					i := strings.IndexAny(clause, "+=")
					if i < 0 {
						continue
					}
					who, perms := clause[:i], clause[i+1:]
					if strings.ContainsAny(who, "oa") && strings.Contains(perms, "w") {
						return tok, true
					}
				}
				break
			}
			break // first operand is the mode; anything else is not ours
		}
	}
	return "", false
}

func isNumericMode(t string) bool {
	if len(t) < 3 || len(t) > 4 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '7' {
			return false
		}
	}
	return true
}

var symbolicModeRe = lazyRegexp(`^[ugoa]*[-+=][rwxXst]*(?:,[ugoa]*[-+=][rwxXst]*)*$`)

func isSymbolicMode(t string) bool { return symbolicModeRe.MatchString(t) }

// lazyRe compiles its pattern on first use: the scan has about thirty
// patterns, and compiling them at package init would cost every clawkit
// process start (most of which never scan a skill) close to half a
// millisecond.
type lazyRe struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func lazyRegexp(src string) *lazyRe { return &lazyRe{src: src} }

func (l *lazyRe) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

func (l *lazyRe) MatchString(s string) bool { return l.get().MatchString(s) }

func (l *lazyRe) FindAllString(s string, n int) []string { return l.get().FindAllString(s, n) }

// index is the byte offset of the first match in s, or -1.
func (l *lazyRe) index(s string) int {
	if m := l.get().FindStringIndex(s); m != nil {
		return m[0]
	}
	return -1
}

// column turns a byte offset into line s into a 1-based column counted
// in characters (0 when unknown).
func column(s string, at int) int {
	if at < 0 || at > len(s) {
		return 0
	}
	return utf8.RuneCountInString(s[:at]) + 1
}
