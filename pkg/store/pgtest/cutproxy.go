package pgtest

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// CutProxy forwards TCP to a PostgreSQL server and, the first time a
// client sends a message holding Pattern, lets the server answer it and
// then cuts that connection in the middle of the answer: the statement
// reached the server (which may have committed it), the client sees its
// answer break off. Seen counts the messages holding Pattern over every
// connection, so a statement replayed on a new connection shows as a
// second one. Later connections are forwarded untouched.
type CutProxy struct {
	// Tail is what the client gets of the server's whole answer to the
	// statement before the connection is closed (Cuts).
	Tail    func(answer []byte) []byte
	Pattern []byte
	// OnSeen and OnCut, when set, are called for each message holding
	// Pattern and once at the cut (a helper program logs them).
	OnSeen, OnCut func()

	ln      net.Listener
	target  string
	seen    atomic.Int32
	cutOnce sync.Once
	cut     atomic.Bool
}

// Cuts are the ways an answer is cut: none of it (the server read the
// statement and the connection closed, as pgx's own test of v5.13.0's fix
// has it), or its first messages and then the FATAL a terminated backend
// sends (57P01, as pg_terminate_backend does).
var Cuts = map[string]func([]byte) []byte{
	"no-reply":        func([]byte) []byte { return nil },
	"fatal-mid-reply": func(b []byte) []byte { return append(headOfAnswer(b), fatalTerminated()...) },
}

// StartCutProxy listens on 127.0.0.1 and forwards to target (host:port).
func StartCutProxy(target, pattern string, tail func([]byte) []byte) (*CutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CutProxy{ln: ln, target: target, Pattern: []byte(pattern), Tail: tail}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p, nil
}

// Close stops accepting connections.
func (p *CutProxy) Close() error { return p.ln.Close() }

// Seen is how many client messages held the pattern.
func (p *CutProxy) Seen() int { return int(p.seen.Load()) }

// Cut reports whether the answer was cut.
func (p *CutProxy) Cut() bool { return p.cut.Load() }

// URL is dbURL with the proxy's address.
func (p *CutProxy) URL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	u.Host = p.ln.Addr().String()
	return u.String(), nil
}

func (p *CutProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var cutHere atomic.Bool // this connection carries the statement to cut
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if k := bytes.Count(buf[:n], p.Pattern); k > 0 {
					p.seen.Add(int32(k))
					for range k {
						if p.OnSeen != nil {
							p.OnSeen()
						}
					}
					p.cutOnce.Do(func() { cutHere.Store(true) })
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				s.Close()
				return
			}
		}
	}()
	buf := make([]byte, 1<<20)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if cutHere.Load() {
				// Wait for the whole answer (the statement is done on the
				// server), then give the client only Tail of it.
				s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				for n < len(buf) && bytes.IndexByte(buf[:n], 'Z') < 0 {
					m, err := s.Read(buf[n:])
					n += m
					if err != nil {
						break
					}
				}
				p.cut.Store(true) // before the client can see the cut
				if p.OnCut != nil {
					p.OnCut()
				}
				c.Write(p.Tail(buf[:n]))
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// headOfAnswer is the messages of an answer before its CommandComplete
// ('C') or ReadyForQuery ('Z'): the answer stops in the middle.
func headOfAnswer(b []byte) []byte {
	i := 0
	for i+5 <= len(b) {
		if b[i] == 'C' || b[i] == 'Z' {
			break
		}
		l := int(b[i+1])<<24 | int(b[i+2])<<16 | int(b[i+3])<<8 | int(b[i+4])
		if i+1+l > len(b) {
			break
		}
		i += 1 + l
	}
	return b[:i]
}

// fatalTerminated is an ErrorResponse as PostgreSQL sends it to the client
// of a terminated backend.
func fatalTerminated() []byte {
	var body bytes.Buffer
	for _, f := range [][2]string{{"S", "FATAL"}, {"V", "FATAL"}, {"C", "57P01"}, {"M", "terminating connection due to administrator command"}} {
		body.WriteString(f[0])
		body.WriteString(f[1])
		body.WriteByte(0)
	}
	body.WriteByte(0)
	l := body.Len() + 4
	return append([]byte{'E', byte(l >> 24), byte(l >> 16), byte(l >> 8), byte(l)}, body.Bytes()...)
}
