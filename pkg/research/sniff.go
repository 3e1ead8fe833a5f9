// Content sniffing of the Office and OpenDocument inputs (docs/research.md,
// "Documents and images"): a type is decided by what the file holds, never
// by its name. OOXML is a zip whose [Content_Types].xml names a main part
// the zip holds; ODF a zip whose first entry, "mimetype", stored, names
// the type; the legacy formats an OLE2 compound file told apart by the
// streams of its root storage. Every read is bounded: a hostile file costs
// at most a few MiB of reads, whatever it claims.

package research

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"io"
	"strings"
	"unicode/utf16"

	"github.com/clawkit/clawkit/pkg/research/google"
)

// Sniffing bounds.
const (
	maxZipEntries       = 20000
	maxZipDirBytes      = 8 << 20
	maxContentTypesSize = 1 << 20
	maxOLEDirSectors    = 1024
	maxOLEFATSectors    = 4096
)

// SniffFile returns the MIME type of the size bytes r holds among the
// SDKs' document and image types, from the content alone ("" when it is
// none of them).
func SniffFile(r io.ReaderAt, size int64) string {
	head := make([]byte, 512)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		if m := sniffODF(head); m != "" {
			return m
		}
		return sniffOOXML(r, size)
	case bytes.HasPrefix(head, oleMagic):
		return sniffOLE(r, size)
	}
	return SniffMIME(head, int64(n) < size)
}

// sniffODF reads the first local file header: an entry named "mimetype",
// stored (not compressed), whose bytes are one of the three ODF types.
func sniffODF(head []byte) string {
	if len(head) < 30 {
		return ""
	}
	flags := binary.LittleEndian.Uint16(head[6:])
	method := binary.LittleEndian.Uint16(head[8:])
	csize := int(binary.LittleEndian.Uint32(head[18:]))
	nameLen := int(binary.LittleEndian.Uint16(head[26:]))
	extraLen := int(binary.LittleEndian.Uint16(head[28:]))
	if method != 0 || nameLen != len("mimetype") || 30+nameLen > len(head) || string(head[30:30+nameLen]) != "mimetype" {
		return ""
	}
	start := 30 + nameLen + extraLen
	if start > len(head) {
		return ""
	}
	data := head[start:]
	for _, m := range []string{google.MimeODT, google.MimeODS, google.MimeODP} {
		// The sizes are in the header, or (bit 3, streamed) after the data.
		sized := csize == len(m)
		streamed := csize == 0 && flags&8 != 0
		if (sized || streamed) && bytes.HasPrefix(data, []byte(m)) {
			return m
		}
	}
	return ""
}

// ooxmlMain maps a main part's content type to the document's MIME type.
var ooxmlMain = map[string]string{
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml":   google.MimeDOCX,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml":   google.MimeDOTX,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml":         google.MimeXLSX,
	"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": google.MimePPTX,
}

// sniffOOXML opens the zip (its central directory bounded first) and
// reads [Content_Types].xml: the one main part it declares must be in
// the zip.
func sniffOOXML(r io.ReaderAt, size int64) string {
	if !zipDirBounded(r, size) {
		return ""
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return ""
	}
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		entries[f.Name] = f
	}
	ct := entries["[Content_Types].xml"]
	if ct == nil || ct.UncompressedSize64 > maxContentTypesSize {
		return ""
	}
	rc, err := ct.Open()
	if err != nil {
		return ""
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(io.LimitReader(rc, maxContentTypesSize+1))
	if err != nil || len(data) > maxContentTypesSize {
		return ""
	}
	var types struct {
		Overrides []struct {
			PartName    string `xml:"PartName,attr"`
			ContentType string `xml:"ContentType,attr"`
		} `xml:"Override"`
	}
	if xml.Unmarshal(data, &types) != nil {
		return ""
	}
	found := ""
	for _, o := range types.Overrides {
		m, ok := ooxmlMain[strings.TrimSpace(o.ContentType)]
		if !ok {
			continue
		}
		if found != "" && found != m {
			return "" // two main parts of different kinds: not a document
		}
		if entries[strings.TrimPrefix(o.PartName, "/")] == nil {
			return ""
		}
		found = m
	}
	return found
}

// zipDirBounded reads the end of central directory record and refuses a
// directory too large to list (or none, or a ZIP64 one: Office never
// writes those for documents within the upload bound).
func zipDirBounded(r io.ReaderAt, size int64) bool {
	const eocdLen = 22
	if size < eocdLen {
		return false
	}
	tail := int64(eocdLen + 65535)
	if tail > size {
		tail = size
	}
	buf := make([]byte, tail)
	if n, _ := r.ReadAt(buf, size-tail); int64(n) != tail {
		return false
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return false
	}
	count := binary.LittleEndian.Uint16(buf[i+10:])
	dirSize := binary.LittleEndian.Uint32(buf[i+12:])
	return count != 0xFFFF && count <= maxZipEntries && dirSize <= maxZipDirBytes && dirSize != 0xFFFFFFFF
}

var oleMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// OLE2 sector ids with a meaning of their own.
const (
	oleEndOfChain = 0xFFFFFFFE
	oleNoStream   = 0xFFFFFFFF
	oleMaxRegSect = 0xFFFFFFFA
)

// sniffOLE reads the compound file's directory and names the legacy type
// by the streams of its root storage: WordDocument (doc), Workbook or
// Book (xls), "PowerPoint Document" (ppt). Only the root's own children
// count: an embedded workbook inside a document is not the document.
func sniffOLE(r io.ReaderAt, size int64) string {
	hdr := make([]byte, 512)
	if n, _ := r.ReadAt(hdr, 0); n != 512 {
		return ""
	}
	shift := binary.LittleEndian.Uint16(hdr[30:])
	if shift != 9 && shift != 12 {
		return ""
	}
	sect := int64(1) << shift
	numFAT := binary.LittleEndian.Uint32(hdr[44:])
	dirStart := binary.LittleEndian.Uint32(hdr[48:])
	difatStart := binary.LittleEndian.Uint32(hdr[68:])
	numDIFAT := binary.LittleEndian.Uint32(hdr[72:])
	if numFAT > maxOLEFATSectors {
		return ""
	}
	// The FAT's own sectors: 109 in the header, the rest in the DIFAT chain.
	var fatSects []uint32
	for i := 0; i < 109 && uint32(len(fatSects)) < numFAT; i++ {
		fatSects = append(fatSects, binary.LittleEndian.Uint32(hdr[76+4*i:]))
	}
	next := difatStart
	for d := uint32(0); d < numDIFAT && uint32(len(fatSects)) < numFAT; d++ {
		if next > oleMaxRegSect {
			return ""
		}
		buf := make([]byte, sect)
		if n, _ := r.ReadAt(buf, (int64(next)+1)*sect); int64(n) != sect {
			return ""
		}
		per := int(sect/4) - 1
		for i := 0; i < per && uint32(len(fatSects)) < numFAT; i++ {
			fatSects = append(fatSects, binary.LittleEndian.Uint32(buf[4*i:]))
		}
		next = binary.LittleEndian.Uint32(buf[4*per:])
	}
	perFAT := sect / 4
	fatCache := map[uint32][]byte{}
	fatNext := func(s uint32) (uint32, bool) {
		idx := int64(s) / perFAT
		if idx >= int64(len(fatSects)) {
			return 0, false
		}
		fs := fatSects[idx]
		if fs > oleMaxRegSect {
			return 0, false
		}
		buf, ok := fatCache[fs]
		if !ok {
			buf = make([]byte, sect)
			if n, _ := r.ReadAt(buf, (int64(fs)+1)*sect); int64(n) != sect {
				return 0, false
			}
			fatCache[fs] = buf
		}
		return binary.LittleEndian.Uint32(buf[(int64(s)%perFAT)*4:]), true
	}
	// The directory: a chain of sectors of 128-byte entries.
	var dir []byte
	seen := map[uint32]bool{}
	for s := dirStart; s != oleEndOfChain; {
		if s > oleMaxRegSect || seen[s] || len(seen) >= maxOLEDirSectors || (int64(s)+2)*sect > size {
			return ""
		}
		seen[s] = true
		buf := make([]byte, sect)
		if n, _ := r.ReadAt(buf, (int64(s)+1)*sect); int64(n) != sect {
			return ""
		}
		dir = append(dir, buf...)
		var ok bool
		if s, ok = fatNext(s); !ok {
			return ""
		}
	}
	entries := len(dir) / 128
	if entries == 0 || dir[66] != 5 { // entry 0 is the root storage
		return ""
	}
	names := map[string]bool{}
	visited := map[uint32]bool{}
	stack := []uint32{binary.LittleEndian.Uint32(dir[76:])} // the root's child
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == oleNoStream || int(id) >= entries || visited[id] {
			continue
		}
		visited[id] = true
		e := dir[int(id)*128 : int(id)*128+128]
		if e[66] == 2 { // a stream
			names[oleName(e)] = true
		}
		stack = append(stack, binary.LittleEndian.Uint32(e[68:]), binary.LittleEndian.Uint32(e[72:]))
	}
	switch {
	case names["WordDocument"]:
		return google.MimeDOC
	case names["Workbook"], names["Book"]:
		return google.MimeXLS
	case names["PowerPoint Document"]:
		return google.MimePPT
	}
	return ""
}

// oleName decodes a directory entry's UTF-16LE name.
func oleName(e []byte) string {
	n := int(binary.LittleEndian.Uint16(e[64:]))
	if n < 2 || n > 64 || n%2 != 0 {
		return ""
	}
	u := make([]uint16, 0, n/2-1)
	for i := 0; i+1 < n-2; i += 2 {
		u = append(u, binary.LittleEndian.Uint16(e[i:]))
	}
	return string(utf16.Decode(u))
}

// rangeKind is what narrowing a document type allows: pages, a sheet, or
// nothing ("").
func rangeKind(mime string) string {
	switch mime {
	case "application/pdf", google.MimeDOCX, google.MimeDOTX, google.MimeDOC, google.MimePPTX, google.MimePPT, google.MimeODT, google.MimeODP:
		return "pages"
	case google.MimeXLSX, google.MimeXLS, google.MimeODS:
		return "sheet"
	}
	return ""
}

// typesWithRange lists the document types whose range is of kind.
func typesWithRange(kind string) []string {
	var out []string
	for _, m := range google.DocumentMimeTypes {
		if rangeKind(m) == kind {
			out = append(out, m)
		}
	}
	return out
}
