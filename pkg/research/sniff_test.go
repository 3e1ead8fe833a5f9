package research

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/officetest"
)

func sniffBytes(b []byte) string { return SniffFile(bytes.NewReader(b), int64(len(b))) }

// Each of the ten Office and OpenDocument types is told by its content.
func TestSniffOfficeTypes(t *testing.T) {
	want := map[string]string{"docx": google.MimeDOCX, "dotx": google.MimeDOTX, "xlsx": google.MimeXLSX, "pptx": google.MimePPTX,
		"odt": google.MimeODT, "ods": google.MimeODS, "odp": google.MimeODP, "doc": google.MimeDOC, "xls": google.MimeXLS, "ppt": google.MimePPT}
	for _, k := range officetest.Kinds {
		b, err := officetest.Build(k)
		if err != nil {
			t.Fatal(err)
		}
		if got := sniffBytes(b); got != want[k] {
			t.Errorf("%s: sniffed %q, want %q", k, got, want[k])
		}
	}
	if len(want) != 10 || len(officetest.Kinds) != 10 {
		t.Fatal("ten types")
	}
}

// Look-alikes are none of them: a zip without [Content_Types].xml, one
// whose main part is missing, an ODF whose mimetype is another type or is
// compressed, a compound file with other streams (an Outlook message),
// truncated files.
func TestSniffOfficeLookAlikes(t *testing.T) {
	docx, _ := officetest.Build("docx")
	odt, _ := officetest.Build("odt")
	doc, _ := officetest.Build("doc")
	cases := map[string][]byte{
		"plain zip":          officetest.OOXML("word/document.xml", "application/xml"),
		"main part missing":  missingPart(),
		"odf other mimetype": officetest.ODF("application/epub+zip"),
		"msg":                officetest.OLE("__substg1.0_0037001F"),
		"docx cut":           docx[:len(docx)/2],
		"odt cut":            odt[:40],
		"doc cut":            doc[:700],
		"ole header only":    doc[:512],
	}
	for name, b := range cases {
		if got := sniffBytes(b); got != "" {
			t.Errorf("%s: sniffed %q", name, got)
		}
	}
}

func missingPart() []byte {
	b := officetest.OOXML("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml")
	// Rename the part in both its headers: the override names a part the
	// zip does not hold.
	return bytes.ReplaceAll(b, []byte("word/document.xml"), []byte("word/documenX.xml"))
}

func TestRangeKinds(t *testing.T) {
	for mime, kind := range map[string]string{"application/pdf": "pages", google.MimeDOCX: "pages", google.MimePPT: "pages", google.MimeODP: "pages",
		google.MimeXLSX: "sheet", google.MimeXLS: "sheet", google.MimeODS: "sheet", "text/csv": "", "image/png": ""} {
		if got := rangeKind(mime); got != kind {
			t.Errorf("%s: %q, want %q", mime, got, kind)
		}
	}
}

func FuzzSniffFile(f *testing.F) {
	for _, k := range officetest.Kinds {
		b, _ := officetest.Build(k)
		f.Add(b)
	}
	f.Add([]byte("%PDF-1.4\n"))
	f.Add([]byte("a,b\n1,2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := SniffFile(bytes.NewReader(b), int64(len(b)))
		if m != "" && google.PartType(m) == "" {
			t.Fatalf("sniffed %q, a type the SDKs do not name", m)
		}
	})
}

// Hostile containers are refused without reading past the bounds: a zip
// whose end record claims more entries than the bound, a compound file
// whose directory chain loops on itself, an OpenDocument zip written as a
// stream (sizes after the data) is still recognised.
func TestSniffHostileContainers(t *testing.T) {
	docx, _ := officetest.Build("docx")
	big := append([]byte{}, docx...)
	i := bytes.LastIndex(big, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint16(big[i+10:], 0xFFFF) // entries: ZIP64's marker
	if got := sniffBytes(big); got != "" {
		t.Errorf("zip claiming 65535 entries: %q", got)
	}
	loop, _ := officetest.Build("doc")
	loop = append([]byte{}, loop...)
	binary.LittleEndian.PutUint32(loop[512+4:], 1) // the directory's sector points at itself
	if got := sniffBytes(loop); got != "" {
		t.Errorf("looping directory: %q", got)
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.CreateHeader(&zip.FileHeader{Name: "mimetype", Method: zip.Store})
	_, _ = w.Write([]byte(google.MimeODS))
	_ = z.Close()
	if got := sniffBytes(b.Bytes()); got != google.MimeODS {
		t.Errorf("streamed ODF: %q", got)
	}
}
