package skills

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// A bundle is one skill's files as one artifact (`skill bundle`, the seed's
// readSkillFiles): a POSIX tar (PAX format) holding "<skill>/<path>" for
// every file, sorted by path in byte order, regular files only, mode 0644
// or 0755, owner 0:0 with no names, modification time 0. The same tree
// always gives the same bytes, so a bundle's digest identifies the tree,
// and `tar -xf` unpacks it into a folder that `skill validate --dir` and
// `skill write --from-dir` take as it is. docs/skills.md says why tar.

// maxBundleBytes bounds a bundle read back: the skill limit plus room for
// the headers of the most files a skill may hold (a header, a PAX record
// for a long name, and block padding each).
const maxBundleBytes = skilllint.MaxSkillBytes + skilllint.MaxWalkEntries*4096

// BundleParams names the skill to bundle.
type BundleParams struct {
	Target
	Skill string `json:"skill"`
}

// BundleResult is a checked skill, ready to be written as a bundle: its
// files (sorted by path) and its revision.
type BundleResult struct {
	PluginID string              `json:"pluginId,omitempty"`
	AgentID  string              `json:"agentId,omitempty"`
	Skill    string              `json:"skill"`
	Revision skilllint.Revision  `json:"revision"`
	Files    []SourceFile        `json:"files"`
	Bytes    int64               `json:"bytes"`
	Warnings []skilllint.Finding `json:"warnings"`
}

// checkBundle: the refusals a bundle request's parameters alone decide.
func checkBundle(p BundleParams) (BundleParams, error) {
	var err error
	_, p.Target, err = checkSkillTarget(p.Skill, p.Target)
	return p, err
}

// opBundle reads one installed skill for a bundle, read-only: the skill
// folder and every file are reached without following a link (the walk
// and each open go through the skills root as an os.Root, with Lstat
// checks on every component), each file's requested path must be one the
// authoring contract allows and its resolved path must lie inside the
// skill folder, and the content read must be the content listed.
func opBundle(ctx context.Context, env *owner.OpEnv, p BundleParams) (*BundleResult, error) {
	c, r, tree, _, err := openInstalled(ctx, env, p.Target, p.Skill)
	if err != nil {
		return nil, err
	}
	defer fsx.CloseRead(r)
	skillDir := filepath.Join(c.root, p.Skill)
	var disallowed []string
	files := make([]SourceFile, 0, len(tree))
	for _, e := range tree {
		rel, err := skilllint.NormalizeSkillFilePath(e.Path)
		if err != nil || rel != e.Path {
			disallowed = append(disallowed, e.Path)
			continue
		}
		if err := checkNoLinks(c.root, p.Skill+"/"+rel); err != nil {
			return nil, err
		}
		full := filepath.Join(skillDir, filepath.FromSlash(rel))
		if ok, err := fsx.RealWithin(skillDir, full); err != nil {
			return nil, errs.Failed(errs.CodeReadFailed, "cannot resolve %s: %v", full, err)
		} else if !ok {
			return nil, linkRefused(full)
		}
		f, st, err := openRegular(r, p.Skill+"/"+rel, rel)
		if err != nil {
			if e := errs.As(err); e != nil {
				return nil, e
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil, changedDuring(p.Skill, rel)
			}
			return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", rel, skilllint.UnwrapPathErr(err))
		}
		limit := fileLimit(rel)
		data, rerr := io.ReadAll(io.LimitReader(f, limit+1))
		fsx.CloseRead(f)
		if rerr != nil {
			return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", rel, rerr)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != e.SizeBytes || hex.EncodeToString(sum[:]) != e.SHA256 {
			return nil, changedDuring(p.Skill, rel)
		}
		files = append(files, SourceFile{Path: rel, Content: data, Executable: st.Mode().Perm()&0o111 != 0})
	}
	if len(disallowed) > 0 {
		return nil, errs.Failed(errs.CodeInvalidPath, "skill %s holds %d %s the skill authoring contract does not allow (nothing was bundled): %s",
			p.Skill, len(disallowed), pluralWord(len(disallowed), "file", "files"), strings.Join(disallowed, ", ")).
			WithHint("the files were put there by hand; move them below %s/ or delete them", strings.Join(skilllint.SupportDirs, "/, "))
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	res, err := CheckBundle(p.Skill, files, false)
	if err != nil {
		return nil, err
	}
	res.PluginID, res.AgentID = c.t.PluginID, c.t.AgentID
	return res, nil
}

func changedDuring(skill, rel string) error {
	return errs.Unavailable(CodeChangedDuring, "%s of skill %s changed while it was being read", rel, skill).
		WithHint("run the command again once the skill is no longer being written")
}

// BundleDir reads a skill folder on disk for a bundle (stateless, like
// `validate --dir`): the folder name is the skill name; links anywhere and
// files the authoring contract does not allow refuse it; each file's
// resolved path must lie inside the folder.
func BundleDir(dir string) (*BundleResult, error) {
	clean := filepath.Clean(dir)
	abs, err := filepath.Abs(clean)
	if err != nil {
		return nil, errs.Usage(errs.CodeInvalidPath, "cannot resolve %s: %v", dir, err)
	}
	skill := filepath.Base(abs)
	if err := skilllint.CheckSkillName(skill); err != nil {
		return nil, err
	}
	src, err := ReadSourceDir("--dir", dir)
	if err != nil {
		return nil, err
	}
	if len(src.Disallowed) > 0 {
		return nil, errs.Usage(errs.CodeInvalidPath, "%s holds %d %s the skill authoring contract does not allow (nothing was bundled): %s",
			dir, len(src.Disallowed), pluralWord(len(src.Disallowed), "path", "paths"), strings.Join(src.Disallowed, ", ")).
			WithHint("a bundle holds only what 'skill write' accepts: SKILL.md and files below %s/; move the others there or delete them", strings.Join(skilllint.SupportDirs, "/, "))
	}
	for _, f := range src.Files {
		full := filepath.Join(abs, filepath.FromSlash(f.Path))
		if ok, err := fsx.RealWithin(abs, full); err != nil {
			return nil, errs.Failed(errs.CodeReadFailed, "cannot resolve %s: %v", full, err)
		} else if !ok {
			return nil, errs.Refused(errs.CodePathEscape, "%s leads outside %s through a link; links are refused", full, dir)
		}
	}
	return CheckBundle(skill, src.Files, false)
}

// CheckBundle checks a skill's files as `skill write` would (the OpenClaw
// authoring profile: paths, frontmatter, security scan, file and tree
// limits) and returns them sorted with the revision. A skill that would
// not be accepted back is never bundled.
func CheckBundle(skill string, files []SourceFile, strict bool) (*BundleResult, error) {
	rep := &skilllint.Report{Skill: skill, Strict: strict}
	var md []byte
	seen := map[string]bool{}
	tree := make([]skilllint.FileEntry, 0, len(files))
	out := append([]SourceFile(nil), files...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	var total int64
	for _, f := range out {
		rel, err := skilllint.NormalizeSkillFilePath(f.Path)
		if err != nil {
			return nil, err
		}
		if seen[rel] {
			return nil, errs.Failed(CodeInvalidBundle, "file %s is given twice", rel)
		}
		seen[rel] = true
		if rel == skilllint.SkillFile {
			md = f.Content
			rep.Add(skilllint.CheckSkillMDAs(skill, f.Content, skilllint.Options{Profile: skilllint.ProfileOpenClaw})...)
		} else {
			rep.Add(skilllint.CheckSupportFile(rel, f.Content)...)
		}
		sum := sha256.Sum256(f.Content)
		tree = append(tree, skilllint.FileEntry{Path: rel, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(f.Content))})
		total += int64(len(f.Content))
	}
	if md == nil {
		return nil, errs.Failed(errs.CodeInvalidFrontmatter, "skill %s has no SKILL.md; every skill starts with one", skill).
			WithHint("add SKILL.md with name: %s and a description", skill)
	}
	rep.Add(skilllint.TreeLimits(tree)...)
	rep.Finish()
	if err := rep.Err(); err != nil {
		return nil, err
	}
	return &BundleResult{Skill: skill, Revision: skilllint.RevisionOf(md, tree), Files: out, Bytes: total, Warnings: rep.Warnings}, nil
}

// WriteBundle writes the bundle of a checked skill (see the top of this
// file for the format). The output depends only on the skill name and
// the files.
func WriteBundle(w io.Writer, b *BundleResult) error {
	tw := tar.NewWriter(w)
	for _, f := range b.Files {
		mode := int64(0o644)
		if f.Executable {
			mode = 0o755
		}
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     b.Skill + "/" + f.Path,
			Mode:     mode,
			Size:     int64(len(f.Content)),
			ModTime:  time.Unix(0, 0),
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	return tw.Close()
}

// BundleBytes is WriteBundle into memory, with the bundle's SHA-256.
func BundleBytes(b *BundleResult) ([]byte, string, error) {
	var buf bytes.Buffer
	if err := WriteBundle(&buf, b); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ReadBundle reads a bundle back for `skill write --from-bundle`: a tar
// whose entries all lie in one top folder (the skill's name). It accepts
// what `skill bundle` writes and what `tar -cf b.tar SKILL` makes of a
// skill folder (folder entries, a leading "./", PAX global headers are
// tolerated); it refuses links (path_escape), any other non-regular entry,
// a path that leaves the folder, duplicates, and anything over the skill
// limits, reading at most maxBundleBytes. Files the authoring contract does
// not allow are listed in Disallowed (not kept), as --from-dir does.
//
// A bundle must be whole: every entry's data read to its size, and the
// end-of-archive marker (two zero blocks) present. A tar cut short at a
// block boundary or inside an entry's padding reads, to Go's tar reader,
// like a shorter archive; installing it would replace the skill with the
// files that happened to arrive (docs/skills.md, "skill bundle"), so it is
// refused (invalid_bundle) and nothing is written.
func ReadBundle(r io.Reader) (skill string, tree *SourceTree, err error) {
	lr := &io.LimitedReader{R: r, N: maxBundleBytes + 1}
	er := &eofReader{r: lr}
	tr := tar.NewReader(er)
	tree = &SourceTree{}
	seen := map[string]bool{}
	var total int64
	entries := 0
	bad := func(format string, args ...any) error {
		return errs.Failed(CodeInvalidBundle, "the bundle is not usable: "+format, args...).
			WithHint("make the bundle with 'clawkit skill bundle', or a tar of one skill folder")
	}
	for {
		h, err := tr.Next()
		if lr.N <= 0 {
			return "", nil, errs.Failed(errs.CodeTooLarge, "the bundle is larger than %d bytes; a skill holds at most %d bytes", maxBundleBytes, skilllint.MaxSkillBytes)
		}
		if errors.Is(err, io.EOF) && !er.eof {
			break // the end-of-archive marker: two zero blocks, read whole
		}
		if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && entries == 0 && er.n < 512 {
			return "", nil, bad("it is %d bytes, shorter than one tar header (a bundle is a tar archive)", er.n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", nil, truncatedBundle(er.n)
		}
		if err != nil {
			return "", nil, bad("%v", err)
		}
		if entries++; entries > skilllint.MaxWalkEntries {
			return "", nil, errs.Failed(errs.CodeTooLarge, "the bundle holds more than %d entries; a skill holds at most %d files", skilllint.MaxWalkEntries, skilllint.MaxFiles)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata only (e.g. a commit id); never a file
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag == tar.TypeDir {
			name = strings.TrimSuffix(name, "/")
		}
		top, rel, _ := strings.Cut(name, "/")
		if err := skilllint.CheckSkillName(top); err != nil {
			if errs.CodeOf(err) == errs.CodePathEscape {
				return "", nil, errs.Refused(errs.CodePathEscape, "bundle entry %q does not lie in one skill folder", h.Name)
			}
			return "", nil, err
		}
		if skill == "" {
			skill = top
		} else if top != skill {
			return "", nil, bad("entries lie in two folders, %q and %q; a bundle holds one skill", skill, top)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if rel != "" {
				if err := checkBundleDir(rel); err != nil {
					return "", nil, err
				}
			}
			continue
		case tar.TypeSymlink, tar.TypeLink:
			return "", nil, errs.Refused(errs.CodePathEscape, "bundle entry %s is a link; links are refused in skills", h.Name).
				WithHint("bundle the file the link points to instead")
		case tar.TypeReg, '\x00': // tar.TypeRegA (deprecated): a tar -cf of a skill folder from an old writer marks regular files '\x00'; accepting it is the point
		default:
			return "", nil, errs.Usage(errs.CodeNotRegularFile, "bundle entry %s is not a regular file (type %q); a skill holds regular files only", h.Name, string(h.Typeflag))
		}
		if rel == "" {
			return "", nil, bad("entry %q is a file where the skill folder should be", h.Name)
		}
		if _, err := skilllint.NormalizeSkillFilePath(rel); err != nil {
			if errs.CodeOf(err) == errs.CodePathEscape {
				return "", nil, err
			}
			if seen[rel] {
				return "", nil, bad("%s appears twice", rel)
			}
			seen[rel] = true
			tree.Disallowed = append(tree.Disallowed, rel)
			continue
		}
		if seen[rel] {
			return "", nil, bad("%s appears twice", rel)
		}
		seen[rel] = true
		limit := fileLimit(rel)
		if h.Size > limit {
			return "", nil, errs.Failed(errs.CodeTooLarge, "%s is %d bytes; the limit is %d bytes", rel, h.Size, limit)
		}
		if total += h.Size; total > skilllint.MaxSkillBytes {
			return "", nil, errs.Failed(errs.CodeTooLarge, "the bundle holds more than %d bytes; a skill holds at most %d bytes", skilllint.MaxSkillBytes, skilllint.MaxSkillBytes)
		}
		if len(tree.Files) >= skilllint.MaxFiles {
			return "", nil, errs.Failed(errs.CodeTooLarge, "the bundle holds more than %d files; a skill holds at most %d", skilllint.MaxFiles, skilllint.MaxFiles)
		}
		data, err := io.ReadAll(io.LimitReader(tr, limit+1))
		if errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && int64(len(data)) < h.Size) {
			return "", nil, truncatedBundle(er.n).WithHint("%s holds %d of its %d bytes; make the bundle again and copy it whole", rel, len(data), h.Size)
		}
		if err != nil {
			return "", nil, bad("%s: %v", rel, err)
		}
		if int64(len(data)) != h.Size {
			return "", nil, bad("%s: the entry is truncated", rel)
		}
		tree.Files = append(tree.Files, SourceFile{Path: rel, Content: data, Executable: h.Mode&0o111 != 0})
	}
	if lr.N <= 0 {
		return "", nil, errs.Failed(errs.CodeTooLarge, "the bundle is larger than %d bytes; a skill holds at most %d bytes", maxBundleBytes, skilllint.MaxSkillBytes)
	}
	if skill == "" {
		return "", nil, bad("it holds no files")
	}
	sort.Strings(tree.Disallowed)
	sort.Slice(tree.Files, func(i, j int) bool { return tree.Files[i].Path < tree.Files[j].Path })
	return skill, tree, nil
}

// truncatedBundle: the input ended before the bundle did.
func truncatedBundle(n int64) *errs.Error {
	return errs.Failed(CodeInvalidBundle, "the bundle is truncated: it ends after %d bytes, before the end-of-archive marker; nothing was written", n).
		WithHint("the copy was cut short; make the bundle again ('clawkit skill bundle') and copy it whole")
}

// eofReader notes whether the reader under a tar reader ran out. Go's tar
// reader reports io.EOF both for the end-of-archive marker (two zero
// blocks read whole, after which it reads nothing more) and for an input
// that simply stops at a block boundary or inside an entry's padding;
// only in the second case did it see the input end. Data handed over
// together with io.EOF is passed on first and the end reported on the next
// call, so eof is set exactly when the tar reader was told "no more".
type eofReader struct {
	r   io.Reader
	n   int64 // bytes handed to the tar reader
	eof bool  // the tar reader was given (0, io.EOF)
	end bool  // the input has ended; the next call reports it
}

func (e *eofReader) Read(p []byte) (int, error) {
	if e.end {
		e.eof = true
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	e.n += int64(n)
	if err == io.EOF {
		if n > 0 {
			e.end = true
			return n, nil
		}
		e.eof = true
	}
	return n, err
}

// checkBundleDir checks a folder entry's skill-relative path: no segment
// may leave the skill (files below decide what is allowed).
func checkBundleDir(rel string) error {
	for _, s := range strings.Split(rel, "/") {
		switch {
		case s == "..":
			return skilllint.PathEscape(rel, "the path has a '..' segment")
		case s == "" || s == "." || strings.ContainsAny(s, "\\\x00"):
			return errs.Failed(CodeInvalidBundle, "the bundle is not usable: folder entry %q is not a clean path", rel)
		}
	}
	if strings.HasPrefix(rel, "/") {
		return skilllint.PathEscape(rel, "the path is absolute")
	}
	return nil
}

// String describes a bundle result for a human line.
func (b *BundleResult) String() string {
	return fmt.Sprintf("skill %s: %d %s, %d bytes, tree %s", b.Skill, len(b.Files), pluralWord(len(b.Files), "file", "files"), b.Bytes, b.Revision.TreeSHA256)
}

// Tree lists the bundle's files with their digests (no content).
func (b *BundleResult) Tree() []skilllint.FileEntry {
	out := make([]skilllint.FileEntry, 0, len(b.Files))
	for _, f := range b.Files {
		sum := sha256.Sum256(f.Content)
		out = append(out, skilllint.FileEntry{Path: f.Path, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(f.Content))})
	}
	return out
}
