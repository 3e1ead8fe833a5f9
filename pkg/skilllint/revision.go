package skilllint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// FileEntry is one file of a skill in the revision's tree list.
type FileEntry struct {
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"sizeBytes"`
}

// Revision identifies a skill's content (docs/skills.md): contentSha256 is the
// digest of SKILL.md, treeSha256 the digest of the sorted file list.
type Revision struct {
	ContentSHA256 string `json:"contentSha256"`
	TreeSHA256    string `json:"treeSha256"`
}

// RevisionOf computes a revision. The tree digest is SHA-256 over the
// compact JSON array [{"path","sha256","sizeBytes"},…] sorted by path
// (byte order), each sha256 the plain lowercase hex digest of that file,
// with no HTML escaping and no trailing newline. Anyone can recompute it
// from the files with a few lines of script.
func RevisionOf(skillMD []byte, tree []FileEntry) Revision {
	c := sha256.Sum256(skillMD)
	return Revision{ContentSHA256: "sha256:" + hex.EncodeToString(c[:]), TreeSHA256: TreeDigest(tree)}
}

// TreeDigest is the treeSha256 of a file list (see RevisionOf).
func TreeDigest(tree []FileEntry) string {
	t := append([]FileEntry(nil), tree...)
	SortTree(t)
	if t == nil {
		t = []FileEntry{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(t) // cannot fail for these types
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	d := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(d[:])
}

// SortTree sorts a file list by path (byte order), as the tree digest does.
func SortTree(t []FileEntry) {
	sort.Slice(t, func(i, j int) bool { return t[i].Path < t[j].Path })
}

func sha256Hex(data []byte, size, limit int64) string {
	if size > limit || int64(len(data)) != size {
		return ""
	}
	d := sha256.Sum256(data)
	return hex.EncodeToString(d[:])
}
