package artifacts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// gzWriter is a deterministic parallel gzip writer: the input is cut into
// fixed blocks of gzipBlock bytes, each compressed on its own goroutine
// with the last gzipTail bytes of the previous block as dictionary and
// ended with a sync flush, the last one closed. Its output is byte for byte
// what pgzip writes with the same block size and level (a test compares
// them); it exists for memory: pgzip takes a whole block-sized buffer for
// every 16 KiB dictionary and keeps up to three such buffers per block in
// flight, about 12 MiB per archive at 1 MiB blocks, where this writer keeps
// one input buffer per job, a compressed-output buffer that grows only to
// the block's compressed size and a 16 KiB dictionary, allocated only as
// the archive's size calls for them (a 50 KiB archive uses one job and one
// compressor).
type gzWriter struct {
	w       io.Writer
	level   int
	block   int
	workers int // compressing goroutines at most
	maxJobs int // jobs in flight at most (filling + compressing + writing)

	crc  uint32
	size uint32 // ISIZE: the input length modulo 2^32
	cur  *gzJob // the job being filled; nil before the first byte
	tail []byte // the last gzipTail bytes of the previous block

	free    chan *gzJob // jobs ready for reuse
	jobs    int         // jobs allocated
	work    chan *gzJob // to the compressing goroutines
	order   chan *gzJob // to the writing goroutine, in input order
	started int         // compressing goroutines started
	wg      sync.WaitGroup
	wrote   chan struct{} // closed when the writing goroutine has returned

	mu          sync.Mutex
	err         error
	closed      bool
	wroteHeader bool
}

// gzipTail is the dictionary carried from one block to the next: pgzip's.
const gzipTail = 16 << 10

type gzJob struct {
	level int
	in    []byte
	dict  []byte
	out   bytes.Buffer
	last  bool
	done  chan struct{} // receives once the block is compressed
	cerr  error
}

// newGzWriter returns a writer whose gzip header is OpenClaw's explicit
// one (no mtime, no name, XFL 0, OS 255).
func newGzWriter(w io.Writer, level, block, workers int) (*gzWriter, error) {
	// Explicit levels only (1 to 9): blocks keep one compressor per level.
	if level < flate.BestSpeed || level > flate.BestCompression {
		return nil, errors.New("gzip: invalid level")
	}
	if block <= gzipTail || workers < 1 {
		return nil, errors.New("gzip: invalid block size or concurrency")
	}
	z := &gzWriter{
		w: w, level: level, block: block, workers: workers, maxJobs: workers + 2,
		free:  make(chan *gzJob, workers+2),
		work:  make(chan *gzJob, workers+2),
		order: make(chan *gzJob, workers+2),
		wrote: make(chan struct{}),
	}
	go z.writeLoop()
	return z, nil
}

// SetLevel sets the deflate level of the blocks submitted from now on: the
// block being filled, when it fills or the writer is closed, and the
// following ones. Blocks are cut at fixed offsets, so a caller that sets
// levels at fixed points of its input gets the same bytes every time.
func (z *gzWriter) SetLevel(level int) error {
	if level < flate.BestSpeed || level > flate.BestCompression {
		return errors.New("gzip: invalid level")
	}
	z.level = level
	return nil
}

// header writes the gzip header on the first write, as pgzip does: before
// it nothing reaches the destination (a test hooks the destination's
// first write to change a file between its fstat and its read).
func (z *gzWriter) header() {
	if z.wroteHeader {
		return
	}
	z.wroteHeader = true
	if _, err := z.w.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}); err != nil {
		z.setErr(err)
	}
}

func (z *gzWriter) setErr(err error) {
	z.mu.Lock()
	if z.err == nil {
		z.err = err
	}
	z.mu.Unlock()
}

func (z *gzWriter) getErr() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.err
}

// job returns a job to fill: a free one, a new one while fewer than maxJobs
// exist, else the next one the writing goroutine frees.
func (z *gzWriter) job() *gzJob {
	select {
	case j := <-z.free:
		return j
	default:
	}
	if z.jobs < z.maxJobs {
		z.jobs++
		return &gzJob{in: make([]byte, 0, z.block), done: make(chan struct{}, 1)}
	}
	return <-z.free
}

// Write copies p into blocks, handing each full block to the compressors.
func (z *gzWriter) Write(p []byte) (int, error) {
	z.header()
	if err := z.getErr(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if z.cur == nil {
			z.cur = z.job()
		}
		room := z.block - len(z.cur.in)
		k := min(room, len(p))
		z.cur.in = append(z.cur.in, p[:k]...)
		p = p[k:]
		n += k
		if len(z.cur.in) == z.block {
			z.submit(false)
			if err := z.getErr(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// readN fills blocks straight from r until r is exhausted or n bytes
// were read (n < 0: no limit), teeing what it reads into tee when not nil.
// It saves the copy through an intermediate buffer.
func (z *gzWriter) readN(r io.Reader, n int64, tee io.Writer) (int64, error) {
	z.header()
	var got int64
	for n < 0 || got < n {
		if err := z.getErr(); err != nil {
			return got, err
		}
		if z.cur == nil {
			z.cur = z.job()
		}
		in := z.cur.in
		want := z.block - len(in)
		if n >= 0 && int64(want) > n-got {
			want = int(n - got)
		}
		m, err := r.Read(in[len(in) : len(in)+want])
		if m > 0 {
			if tee != nil {
				_, _ = tee.Write(in[len(in) : len(in)+m]) // tee is a hash: its Write never fails
			}
			z.cur.in = in[:len(in)+m]
			got += int64(m)
			if len(z.cur.in) == z.block {
				z.submit(false)
			}
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// submit hands the current job to the compressors and queues it for
// writing in order.
func (z *gzWriter) submit(last bool) {
	j := z.cur
	z.cur = nil
	z.crc = crc32.Update(z.crc, crc32.IEEETable, j.in)
	z.size += uint32(len(j.in))
	j.last = last
	j.level = z.level
	j.dict = append(j.dict[:0], z.tail...)
	if len(j.in) > gzipTail {
		z.tail = append(z.tail[:0], j.in[len(j.in)-gzipTail:]...)
	} else {
		z.tail = z.tail[:0]
	}
	// One more compressing goroutine per block until there are workers of
	// them: a small archive starts one.
	if z.started < z.workers {
		z.started++
		z.wg.Add(1)
		go z.compressLoop()
	}
	z.order <- j
	z.work <- j
}

func (z *gzWriter) compressLoop() {
	defer z.wg.Done()
	var fws [flate.BestCompression + 1]*flate.Writer // one per level used
	for j := range z.work {
		j.out.Reset()
		fw := fws[j.level]
		if fw == nil {
			fw, _ = flate.NewWriter(&j.out, j.level) // the level was checked
			fws[j.level] = fw
		}
		// A nil dictionary, as pgzip passes for the first block, and an
		// empty one are the same to the compressor.
		fw.ResetDict(&j.out, j.dict)
		_, err := fw.Write(j.in)
		if err == nil {
			err = fw.Flush()
		}
		if err == nil && j.last {
			err = fw.Close()
		}
		j.cerr = err
		j.done <- struct{}{}
	}
}

func (z *gzWriter) writeLoop() {
	defer close(z.wrote)
	for j := range z.order {
		<-j.done
		if j.cerr != nil {
			z.setErr(j.cerr)
		} else if z.getErr() == nil {
			if _, err := z.w.Write(j.out.Bytes()); err != nil {
				z.setErr(err)
			}
		}
		j.in = j.in[:0]
		z.free <- j
	}
}

// Close compresses the last (possibly empty) block, waits for every block
// to be written and writes the trailer. It also settles the goroutines
// after a failure, so it must always be called.
func (z *gzWriter) Close() error {
	if z.closed {
		return z.getErr()
	}
	z.closed = true
	z.header()
	if z.cur == nil {
		z.cur = z.job()
	}
	z.submit(true)
	close(z.order)
	close(z.work)
	z.wg.Wait()
	<-z.wrote
	if err := z.getErr(); err != nil {
		return err
	}
	var t [8]byte
	binary.LittleEndian.PutUint32(t[0:], z.crc)
	binary.LittleEndian.PutUint32(t[4:], z.size)
	if _, err := z.w.Write(t[:]); err != nil {
		z.setErr(err)
		return err
	}
	return nil
}
