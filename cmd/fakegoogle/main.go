// Command fakegoogle serves the in-repo fake of Google's Interactions API
// (the one fake clawkit ships) on a loopback port, for demos and trying
// `clawkit research` without a key or network. It writes its server URL
// (without an API version: clawkit and the SDKs add it) to
// --url-file once it listens and logs every request to --log; point
// clawkit at it with CLAWKIT_GOOGLE_BASE_URL. Stop it with SIGINT/SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
)

func main() {
	url := flag.String("url-file", "fakegoogle.url", "where to write the base URL once listening")
	log := flag.String("log", "fakegoogle.log", "request log (JSON lines)")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (partition tests: an address inside a test network namespace)")
	flag.Parse()
	if err := fakeapi.ServeOn(*listen, *url, *log); err != nil {
		fmt.Fprintln(os.Stderr, "fakegoogle:", err)
		os.Exit(1)
	}
}
