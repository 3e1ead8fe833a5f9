package store_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// cutProxy forwards TCP to a PostgreSQL server and, the first time a
// client sends a message holding pattern, lets the server answer it and
// then cuts the connection in the middle of that answer: the statement has
// reached the server (and, in autocommit, committed), the client sees its
// reply break off. seen counts the messages holding pattern over every
// connection, so a replay of the statement shows as a second one.
type cutProxy struct {
	// tail is what the client gets of the server's whole answer to the
	// statement before the connection is closed.
	tail    func(reply []byte) []byte
	ln      net.Listener
	target  string
	pattern []byte
	seen    atomic.Int32
	cutOnce sync.Once
	cutDone atomic.Bool
}

func startCutProxy(t *testing.T, target string, pattern string, tail func([]byte) []byte) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, pattern: []byte(pattern), tail: tail}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var cut atomic.Bool // this connection carries the statement to cut
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if k := bytes.Count(buf[:n], p.pattern); k > 0 {
					p.seen.Add(int32(k))
					p.cutOnce.Do(func() { cut.Store(true) })
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
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if cut.Load() {
				// Mid-reply: wait for the whole answer (the statement is
				// done on the server), pass on its first messages, then
				// what a server says when its backend is terminated under
				// a statement (FATAL 57P01), and close.
				s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				for {
					m, err := s.Read(buf[n:])
					n += m
					if err != nil || bytes.IndexByte(buf[:n], 'Z') >= 0 {
						break
					}
				}
				p.cutDone.Store(true) // before the client can see the cut
				c.Write(p.tail(buf[:n]))
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *cutProxy) url(t *testing.T, dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Cuts of a statement's answer: none of it (the server read the statement
// and the connection closed, as pgx's own test of the fix has it), or its
// first messages then the FATAL a terminated backend sends.
var cuts = map[string]func([]byte) []byte{
	"no-reply":        func([]byte) []byte { return nil },
	"fatal-mid-reply": func(b []byte) []byte { return append(headOfReply(b), fatalTerminated()...) },
}

// A statement whose connection drops while its answer is awaited is never
// replayed by database/sql: the server saw it once and the caller gets an
// error. Before pgx 5.13.0 a connection closed while the answer of a
// simple-protocol statement (any Exec without arguments, and every COMMIT)
// was read counted as "safe to retry", and database/sql ran the statement
// again on a new connection (the no-reply cases fail on pgx 5.12.0).
func TestStatementCutMidReplyIsNotReplayed(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, _ := url.Parse(dbURL)
	ctx := context.Background()
	setup := &store.Postgres{URL: dbURL}
	db, err := setup.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE cut_probe (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	for name, tail := range cuts {
		for _, withArgs := range []bool{false, true} {
			id := fmt.Sprintf("%s-%v", name, withArgs)
			t.Run(id, func(t *testing.T) {
				// The statement's own value marks it: in the query text
				// (simple protocol) or in its Bind message (extended), so
				// the cut falls on its execution, never on a prepare.
				p := startCutProxy(t, u.Host, id, tail)
				e := &store.Postgres{URL: p.url(t, dbURL)}
				pdb, err := e.Open(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer pdb.Close()
				if withArgs {
					_, err = pdb.ExecContext(ctx, `INSERT INTO cut_probe (id) VALUES ($1)`, id)
				} else {
					_, err = pdb.ExecContext(ctx, `INSERT INTO cut_probe (id) VALUES ('`+id+`')`)
				}
				if !p.cutDone.Load() {
					t.Fatal("the proxy never cut the answer")
				}
				var rows int
				if qerr := db.QueryRowContext(ctx, `SELECT count(*) FROM cut_probe WHERE id = $1`, id).Scan(&rows); qerr != nil {
					t.Fatal(qerr)
				}
				// Whether the server committed it is for the caller to find
				// out (its error says the outcome is unknown); twice, never.
				if n := p.seen.Load(); n != 1 || rows > 1 {
					t.Fatalf("the statement reached the server %d times and wrote %d rows: database/sql replayed it (error %v)", n, rows, err)
				}
				if err == nil {
					t.Fatal("a statement whose answer was cut reported success")
				}
			})
		}
	}
}

// headOfReply is the messages of a reply before its CommandComplete ('C')
// or ReadyForQuery ('Z'): the statement's answer stops in the middle.
func headOfReply(b []byte) []byte {
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

// fatalTerminated is an ErrorResponse as PostgreSQL sends it to a
// terminated backend's client.
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
