package oauth

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Opener opens an authorization URL for the user; ok is false when there
// is no browser to open it with (the URL is printed instead).
type Opener func(u string) (ok bool, err error)

// SystemOpener opens URLs as a desktop user expects: $BROWSER when set (a
// colon-separated list of commands; %s stands for the URL, else it is
// appended), else the desktop's opener when a display exists. getenv reads
// the environment.
func SystemOpener(getenv func(string) string) (Opener, bool) {
	var cmds [][]string
	if b := getenv("BROWSER"); b != "" {
		for _, c := range strings.Split(b, ":") {
			if f := strings.Fields(c); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	} else {
		switch {
		case runtime.GOOS == "darwin":
			cmds = [][]string{{"open"}}
		case runtime.GOOS == "windows":
			cmds = [][]string{{"rundll32", "url.dll,FileProtocolHandler"}}
		case getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "":
			cmds = [][]string{{"xdg-open"}}
		}
	}
	if len(cmds) == 0 {
		return nil, false
	}
	return func(u string) (bool, error) {
		var last error
		for _, c := range cmds {
			argv := make([]string, 0, len(c)+1)
			subst := false
			for _, a := range c {
				if strings.Contains(a, "%s") {
					a, subst = strings.ReplaceAll(a, "%s", u), true
				}
				argv = append(argv, a)
			}
			if !subst {
				argv = append(argv, u)
			}
			// The URL is an argument, never a shell word; the browser is
			// started, not waited on (a browser may run for hours).
			cmd := exec.Command(argv[0], argv[1:]...)
			if err := cmd.Start(); err != nil {
				last = err
				continue
			}
			go func() { _ = cmd.Wait() }()
			return true, nil
		}
		return false, last
	}, true
}

// callback is the query of the redirect to the loopback listener.
type callback struct {
	query url.Values
	err   error
}

// loopback is the one-request listener the authorization server redirects
// the browser to (RFC 8252 §7.3: 127.0.0.1, a port of the system's
// choosing).
type loopback struct {
	ln   net.Listener
	srv  *http.Server
	got  chan callback
	path string
}

func listenLoopback() (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errs.Unavailable(errs.CodeListenFailed, "cannot listen on 127.0.0.1 for the login redirect: %v", err)
	}
	l := &loopback{ln: ln, got: make(chan callback, 1), path: "/callback"}
	mux := http.NewServeMux()
	mux.HandleFunc(l.path, func(w http.ResponseWriter, r *http.Request) {
		select {
		case l.got <- callback{query: r.URL.Query()}:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "clawkit: the authorization response was received; you can close this window.\n")
		default:
			http.Error(w, "this login already received its response", http.StatusGone)
		}
	})
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

func (l *loopback) redirectURI() string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", l.ln.Addr().(*net.TCPAddr).Port, l.path)
}

func (l *loopback) close() { _ = l.srv.Close() }

// readPasted reads the redirected URL the user pastes on stdin.
func readPasted(r io.Reader, out chan<- callback) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || (u.RawQuery == "" && !strings.Contains(line, "=")) {
			out <- callback{err: errs.Usage(CodeAuthorization, "the pasted text is not the redirected URL").
				WithHint("copy the whole address the browser shows after you approve (it holds code= and state=)")}
			return
		}
		q := u.Query()
		if u.RawQuery == "" {
			q, _ = url.ParseQuery(line)
		}
		out <- callback{query: q}
		return
	}
	out <- callback{err: errs.Usage(CodeAuthorization, "standard input ended before the redirected URL was pasted").
		WithHint("paste the address the browser shows after you approve, then press Enter")}
}

// checkCallback verifies an authorization response (RFC 6749 §4.1.2,
// RFC 9207) and returns its code.
func checkCallback(q url.Values, state string, as *AuthServer) (string, error) {
	if e := q.Get("error"); e != "" {
		msg := termsafe.Text(e)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + termsafe.Text(d)
		}
		return "", errs.Failed(CodeAuthorization, "the authorization server refused: %s", msg).
			WithHint("approve the request in the browser, or check the client's registration")
	}
	if q.Get("state") != state {
		return "", errs.Refused(CodeStateMismatch, "the authorization response's state does not match this login").
			WithHint("the response belongs to another login attempt; run 'clawkit mcp login' again")
	}
	iss, has := q["iss"]
	switch {
	case has && (len(iss) != 1 || iss[0] != as.Issuer):
		return "", errs.Refused(CodeIssMismatch, "the authorization response comes from issuer %s, not %s", termsafe.Text(strings.Join(iss, ",")), termsafe.Text(as.Issuer)).
			WithHint("a mix-up attack or a misconfigured server (RFC 9207); the code was not used")
	case !has && as.AuthorizationResponseIssParameterSupported:
		return "", errs.Refused(CodeIssMismatch, "the authorization response lacks the iss its server advertises").
			WithHint("a mix-up attack or a misconfigured server (RFC 9207); the code was not used")
	}
	code := q.Get("code")
	if code == "" {
		return "", errs.Failed(CodeAuthorization, "the authorization response has no code")
	}
	return code, nil
}

// waitCallback waits for the redirect on the listener or, when paste is
// set, the pasted URL, until ctx ends.
func waitCallback(ctx context.Context, l *loopback, paste io.Reader, timeout time.Duration) (url.Values, error) {
	pasted := make(chan callback, 1)
	if paste != nil {
		go readPasted(paste, pasted)
	}
	select {
	case c := <-l.got:
		return c.query, c.err
	case c := <-pasted:
		return c.query, c.err
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, errs.Unavailable(CodeLoginTimeout, "no authorization response within %s", timeout).
				WithHint("approve the request in the browser sooner, or raise --login-timeout")
		}
		return nil, ctx.Err()
	}
}
