// Package officetest builds the smallest Office and OpenDocument files
// the research input sniffer recognises (pkg/research/sniff.go), for
// tests and test scripts: what each format's container holds, no real
// document content.
package officetest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"unicode/utf16"
)

// Kinds are the names Build takes, one per document type.
var Kinds = []string{"docx", "dotx", "xlsx", "pptx", "odt", "ods", "odp", "doc", "xls", "ppt"}

// Build returns a minimal file of kind (one of Kinds).
func Build(kind string) ([]byte, error) {
	switch kind {
	case "docx":
		return OOXML("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"), nil
	case "dotx":
		return OOXML("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml"), nil
	case "xlsx":
		return OOXML("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"), nil
	case "pptx":
		return OOXML("ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"), nil
	case "odt":
		return ODF("application/vnd.oasis.opendocument.text"), nil
	case "ods":
		return ODF("application/vnd.oasis.opendocument.spreadsheet"), nil
	case "odp":
		return ODF("application/vnd.oasis.opendocument.presentation"), nil
	case "doc":
		return OLE("WordDocument", "1Table"), nil
	case "xls":
		return OLE("Workbook"), nil
	case "ppt":
		return OLE("PowerPoint Document", "Current User"), nil
	// Look-alikes, none of the ten: a zip that declares no main part, an
	// OpenDocument container of another type, an Outlook message.
	case "zip":
		return OOXML("data.xml", "application/xml"), nil
	case "epub":
		return ODF("application/epub+zip"), nil
	case "msg":
		return OLE("__substg1.0_0037001F"), nil
	}
	return nil, fmt.Errorf("officetest: unknown kind %q", kind)
}

// OOXML is a zip with [Content_Types].xml declaring part as the main part
// of contentType, and the part itself.
func OOXML(part, contentType string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.Create("[Content_Types].xml")
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/%s" ContentType="%s"/></Types>`, part, contentType)
	w, _ = z.Create(part)
	_, _ = w.Write([]byte(`<?xml version="1.0"?><root/>`))
	_ = z.Close()
	return b.Bytes()
}

// ODF is a zip whose first entry, stored, is "mimetype" holding mime.
func ODF(mime string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	// Stored, its sizes in the local header, as office suites write it.
	w, _ := z.CreateRaw(&zip.FileHeader{Name: "mimetype", Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(mime)),
		CompressedSize64: uint64(len(mime)), UncompressedSize64: uint64(len(mime))})
	_, _ = w.Write([]byte(mime))
	w, _ = z.Create("content.xml")
	_, _ = w.Write([]byte(`<?xml version="1.0"?><office:document-content/>`))
	_ = z.Close()
	return b.Bytes()
}

// OLE is a compound file (version 3, 512-byte sectors) whose root storage
// holds empty streams of the given names.
func OLE(streams ...string) []byte {
	const sect = 512
	const (
		free   = 0xFFFFFFFF
		end    = 0xFFFFFFFE
		fatSec = 0xFFFFFFFD
	)
	le := binary.LittleEndian
	nDir := (len(streams) + 1 + 3) / 4
	hdr := make([]byte, sect)
	copy(hdr, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1})
	le.PutUint16(hdr[24:], 0x3E)
	le.PutUint16(hdr[26:], 3)
	le.PutUint16(hdr[28:], 0xFFFE)
	le.PutUint16(hdr[30:], 9)
	le.PutUint16(hdr[32:], 6)
	le.PutUint32(hdr[44:], 1) // one FAT sector
	le.PutUint32(hdr[48:], 1) // the directory starts at sector 1
	le.PutUint32(hdr[56:], 4096)
	le.PutUint32(hdr[60:], end)
	le.PutUint32(hdr[68:], end)
	for i := 0; i < 109; i++ {
		le.PutUint32(hdr[76+4*i:], free)
	}
	le.PutUint32(hdr[76:], 0) // the FAT is sector 0
	fat := make([]byte, sect)
	for i := 0; i < sect/4; i++ {
		le.PutUint32(fat[4*i:], free)
	}
	le.PutUint32(fat[0:], fatSec)
	for i := 0; i < nDir; i++ {
		next := uint32(end)
		if i+1 < nDir {
			next = uint32(i + 2)
		}
		le.PutUint32(fat[4*(i+1):], next)
	}
	dir := make([]byte, nDir*sect)
	entry := func(i int, name string, typ byte, child, right uint32) {
		e := dir[i*128 : i*128+128]
		u := utf16.Encode([]rune(name))
		for k, c := range u {
			le.PutUint16(e[2*k:], c)
		}
		le.PutUint16(e[64:], uint16(2*len(u)+2))
		e[66], e[67] = typ, 1
		le.PutUint32(e[68:], free) // left
		le.PutUint32(e[72:], right)
		le.PutUint32(e[76:], child)
		le.PutUint32(e[116:], end)
	}
	child := uint32(free)
	if len(streams) > 0 {
		child = 1
	}
	entry(0, "Root Entry", 5, child, free)
	for i, n := range streams {
		right := uint32(free)
		if i+1 < len(streams) {
			right = uint32(i + 2)
		}
		entry(i+1, n, 2, free, right)
	}
	for i := len(streams) + 1; i < nDir*4; i++ {
		e := dir[i*128 : i*128+128]
		le.PutUint32(e[68:], free)
		le.PutUint32(e[72:], free)
		le.PutUint32(e[76:], free)
	}
	return slices.Concat(hdr, fat, dir)
}
