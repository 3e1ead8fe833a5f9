package main

import (
	"bytes"
	"strings"
	"testing"
)

// A skip whose message has several lines is summarised by its first (the
// reason), not by the last (here docker info's "Client:"); failed tests
// are named in the closing summary.
func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"x/testscript","Test":"TestImage"}`,
		`{"Action":"output","Package":"x/testscript","Test":"TestImage","Output":"=== RUN   TestImage\n"}`,
		`{"Action":"output","Package":"x/testscript","Test":"TestImage","Output":"    image_test.go:25: Docker's daemon does not answer (docker info: exit status 1)\n"}`,
		`{"Action":"output","Package":"x/testscript","Test":"TestImage","Output":"        Client:\n"}`,
		`{"Action":"output","Package":"x/testscript","Test":"TestImage","Output":"--- SKIP: TestImage (0.01s)\n"}`,
		`{"Action":"skip","Package":"x/testscript","Test":"TestImage"}`,
		`{"Action":"output","Package":"x/testscript","Test":"TestScripts/a","Output":"        > [!exec:jq] skip 'needs jq'\n"}`,
		`{"Action":"skip","Package":"x/testscript","Test":"TestScripts/a"}`,
		`{"Action":"output","Package":"x/pkg","Test":"TestBad","Output":"    bad_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"x/pkg","Test":"TestBad"}`,
		`{"Action":"pass","Package":"x/pkg","Test":"TestGood"}`,
	}, "\n")
	var out bytes.Buffer
	if code := run(strings.NewReader(in), &out); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"skipped 1: Docker's daemon does not answer (docker info: exit status 1) (testscript.TestImage)\n",
		"skipped 1: needs jq (testscript.TestScripts/a)\n",
		"failed 1: pkg.TestBad\n",
		"tests: 1 passed, 1 failed, 2 skipped\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "skipped 1: Client:") {
		t.Errorf("the skip is named by a line of docker info's output:\n%s", out.String())
	}
}
