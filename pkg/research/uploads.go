// Inputs larger than the inline limits go through the Files API
// (docs/research.md, "Files larger than the inline limits"): uploaded
// before the create, in 8 MiB chunks, with the session URL and the offset
// the API has confirmed recorded in the job after every chunk, so a start
// killed in the middle goes on (the same start, the same idempotency key)
// from the confirmed offset without sending those bytes again. The create
// names each file by its uri; the job records the uri with the SHA-256 of
// the bytes sent, and deletes the file when it ends unless --keep-uploads.

package research

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// MaxUploadBytes bounds one uploaded input: the Files API's own limit
// per file.
const MaxUploadBytes = 2 << 30

// UploadProgress is an upload under way, as the job records it: the
// session's URL, the offset the API confirmed and the SHA-256 state of the
// bytes up to it. It is cleared when the upload ends.
type UploadProgress struct {
	// Session is kept by the job store beside the options, never shown:
	// it is the upload's capability (storedOptions).
	Session string `json:"-"`
	Offset  int64  `json:"offset"`
	// Digest is the SHA-256 state after Offset bytes: a resumed upload
	// hashes the same prefix again and goes on only if it is the same.
	Digest []byte `json:"digest,omitempty"`
}

// uploading reports whether j is in its upload phase: a submitting job
// whose create has not been sent.
func (j *Job) uploading() bool { return j.Options != nil && j.Options.Uploading }

// uploadInputs uploads each input of j that the Files API takes, in order,
// recording progress after every chunk, and fills in each one's URI and
// SHA-256. paths are the inputs' paths, index-aligned with the records.
func (s *Service) uploadInputs(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, cred credential, paths []string) error {
	c := s.client(j, cred)
	for i := range j.Options.Inputs {
		rec := &j.Options.Inputs[i]
		if !rec.Upload || rec.URI != "" {
			continue
		}
		if rec.File != "" {
			// Uploaded, and still PROCESSING when it was last looked at
			// (a start resumed with its idempotency key): await it again.
			if err := s.awaitProcessed(ctx, env, js, j, c, rec); err != nil {
				return err
			}
			continue
		}
		if err := s.uploadOne(ctx, env, js, j, c, rec, paths[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) uploadOne(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, c *google.Client, rec *InputRecord, path string) error {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return inputErr(path, err)
	}
	defer fsx.CloseRead(f)
	st, err := f.Stat()
	if err != nil {
		return inputErr(path, err)
	}
	if st.Size() != rec.Size {
		return errs.Usage(CodeInputChanged, "input %s is %d bytes now; it was %d when the start was admitted", path, st.Size(), rec.Size).
			WithHint("start it again once the file no longer changes")
	}
	h := sha256.New()
	var offset int64
	if p := rec.Progress; p != nil && p.Session != "" {
		// Resume: ask the session what it holds, and hash that prefix of
		// the file again; a prefix that changed starts a new session.
		q, qerr := c.QueryUpload(ctx, p.Session)
		switch {
		case qerr == nil && (q.Status == "final" || q.Received <= rec.Size):
			upTo := q.Received
			if q.Status == "final" {
				upTo = rec.Size
			}
			if err := resumeDigest(h, f, p, upTo); err != nil {
				if errors.Is(err, errPrefixChanged) {
					return errs.Usage(CodeInputChanged, "input %s changed since its upload began", path).
						WithHint("start it again with a new idempotency key")
				}
				return inputErr(path, err)
			}
			if q.Status == "final" {
				return s.uploaded(ctx, env, js, j, c, rec, q.File, h)
			}
			offset = upTo
		default:
			// The session is gone or answers nonsense: a new one.
			rec.Progress = nil
		}
	}
	if rec.Progress == nil {
		sess, err := c.StartUpload(ctx, rec.Size, rec.MimeType, rec.Name)
		if err != nil {
			return uploadErr(rec.Name, err)
		}
		rec.Progress = &UploadProgress{Session: sess}
		if err := s.saveUpload(ctx, env, js, j); err != nil {
			return err
		}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return inputErr(path, err)
	}
	buf := make([]byte, google.UploadChunkBytes)
	for {
		want := rec.Size - offset
		if want > int64(len(buf)) {
			want = int64(len(buf))
		}
		n, err := io.ReadFull(f, buf[:want])
		if err != nil && !(want == 0 && errors.Is(err, io.EOF)) {
			return inputErr(path, err)
		}
		last := offset+int64(n) == rec.Size
		ans, err := s.sendChunk(ctx, c, rec, offset, buf[:n], last)
		if err != nil {
			return err
		}
		h.Write(buf[:n])
		offset += int64(n)
		if last {
			return s.uploaded(ctx, env, js, j, c, rec, ans.File, h)
		}
		rec.Progress.Offset = offset
		rec.Progress.Digest, _ = h.(encoding.BinaryMarshaler).MarshalBinary()
		if err := s.saveUpload(ctx, env, js, j); err != nil {
			return err
		}
	}
}

// maxChunkRetries bounds how often one chunk is tried again within a
// start after a temporary failure (a transport error, 429, 5xx), each
// after a backoff and a query of the session.
const maxChunkRetries = 3

// sendChunk sends chunk at offset, retrying a temporary failure up to
// maxChunkRetries times within the start. A failed request may still have
// delivered some or all of its bytes, so before sending again it asks
// the session how much it holds (query) and sends only the rest: nothing
// the API already has is sent twice. A refusal, or the retries spent,
// fails the upload (upload_failed; a temporary one leaves the job to be
// resumed by the same start with the same --idempotency-key).
func (s *Service) sendChunk(ctx context.Context, c *google.Client, rec *InputRecord, offset int64, chunk []byte, last bool) (*google.UploadState, error) {
	session := rec.Progress.Session
	data, at := chunk, offset
	var lastErr error
	var retryAfter time.Duration
	for attempt := 0; attempt <= maxChunkRetries; attempt++ {
		if attempt > 0 {
			// 1 s, 2 s, 4 s (scaled with the poll intervals), never less
			// than a Retry-After.
			pause := max(s.budgets().FastInterval/5<<(attempt-1), retryAfter)
			if err := s.sleep(ctx, pause); err != nil {
				return nil, uploadErr(rec.Name, lastErr)
			}
			q, err := c.QueryUpload(ctx, session)
			if err != nil {
				if ge := google.AsError(err); ge != nil && ge.Temporary {
					lastErr, retryAfter = err, ge.RetryAfter
					continue
				}
				return nil, uploadErr(rec.Name, err)
			}
			if q.Status == "final" {
				if last && q.File != nil {
					return q, nil // the whole file arrived; only the answer was lost
				}
				return nil, uploadErr(rec.Name, errors.New("the upload session ended before its last chunk"))
			}
			skip := q.Received - offset
			if skip < 0 || skip > int64(len(chunk)) {
				return nil, uploadErr(rec.Name, fmt.Errorf("the upload session holds %d bytes, outside the chunk sent at %d", q.Received, offset))
			}
			data, at = chunk[skip:], q.Received
			if len(data) == 0 && !last {
				return &google.UploadState{Status: "active", Received: q.Received}, nil
			}
		}
		ans, err := c.UploadChunk(ctx, session, at, data, last)
		if err == nil {
			return ans, nil
		}
		ge := google.AsError(err)
		if ge == nil || !ge.Temporary || ctx.Err() != nil {
			return nil, uploadErr(rec.Name, err)
		}
		lastErr, retryAfter = err, ge.RetryAfter
	}
	return nil, uploadErr(rec.Name, lastErr)
}

// uploaded records a finished upload: the file's name and uri with the
// SHA-256 of the bytes sent; the session is forgotten. A file the API
// is still processing is recorded by name first, and its uri only once
// it is ACTIVE (awaitProcessed): the create never names a file that
// cannot be used yet.
func (s *Service) uploaded(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, c *google.Client, rec *InputRecord, f *google.File, h hash.Hash) error {
	rec.File = f.Name
	rec.SHA256 = hex.EncodeToString(h.Sum(nil))
	rec.Progress = nil
	if f.State == google.FileProcessing {
		if err := s.saveUpload(ctx, env, js, j); err != nil {
			return err
		}
		return s.awaitProcessed(ctx, env, js, j, c, rec)
	}
	rec.URI = f.URI
	return s.saveUpload(ctx, env, js, j)
}

// awaitProcessed waits for an uploaded file the API is processing: GET
// files/ID at the fast poll interval until it is ACTIVE (its uri is then
// recorded) or FAILED (refused: input_processing_failed, the job ends
// not-sent), for at most Budgets.FileProcessingWait; past it the job is
// left uploading (input_not_ready), and the same start with the same
// --idempotency-key awaits the file again. A state clawkit does not know
// is waited for like PROCESSING.
func (s *Service) awaitProcessed(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, c *google.Client, rec *InputRecord) error {
	deadline := env.Now().Add(s.budgets().FileProcessingWait)
	for {
		if err := env.Fence.AssertCurrent(); err != nil {
			return err
		}
		f, err := c.GetFile(ctx, rec.File)
		var retryAfter time.Duration
		switch ge := google.AsError(err); {
		case err == nil && f.State == google.FileActive:
			rec.URI = f.URI
			return s.saveUpload(ctx, env, js, j)
		case err == nil && f.State == google.FileFailed:
			return errs.Failed(CodeInputProcessingFailed, "the provider could not process input %s (%s): its state is FAILED", rec.Name, rec.File).WithJob(j.ID).
				WithHint("check that the file opens and is what its type says; nothing was created, start again with a file the provider can read")
		case err != nil && (ge == nil || !ge.Temporary):
			return uploadErr(rec.Name, err)
		case ge != nil:
			retryAfter = ge.RetryAfter
		}
		now := env.Now()
		pause := s.interval(now, 0, retryAfter)
		if now.Add(pause).After(deadline) {
			// The next look would come after the bound.
			return &uploadError{
				err: errs.Unavailable(CodeInputNotReady, "input %s (%s) is still being processed by the provider after %s", rec.Name, rec.File, s.budgets().FileProcessingWait).WithJob(j.ID).
					WithHint("nothing was created; the same start with the same --idempotency-key waits for the file again"),
				cause: &google.Error{Op: "file", Temporary: true, Msg: "still processing"},
			}
		}
		if err := s.sleep(ctx, pause); err != nil {
			return err
		}
	}
}

func (s *Service) saveUpload(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job) error {
	if err := env.Fence.AssertCurrent(); err != nil {
		return err
	}
	return js.update(context.WithoutCancel(ctx), j, env.Now())
}

var errPrefixChanged = errors.New("the file's beginning changed")

// resumeDigest hashes the first upTo bytes of f into h, checking on the
// way that the first p.Offset of them hash to the recorded state.
func resumeDigest(h hash.Hash, f *os.File, p *UploadProgress, upTo int64) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	checked := p.Offset
	if checked > upTo {
		checked = 0 // the session holds less than was confirmed: hash what it holds
	}
	if _, err := io.CopyN(h, f, checked); err != nil {
		return err
	}
	if checked > 0 {
		got, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil || string(got) != string(p.Digest) {
			return errPrefixChanged
		}
	}
	_, err := io.CopyN(h, f, upTo-checked)
	return err
}

// uploadError is a failed upload request: the catalogued error shown,
// with the provider's classification kept (a temporary failure leaves
// the job to be resumed).
type uploadError struct {
	err   *errs.Error
	cause *google.Error
}

func (e *uploadError) Error() string { return e.err.Error() }
func (e *uploadError) Unwrap() error { return e.err }

func uploadErr(name string, err error) error {
	ge := google.AsError(err)
	msg := err.Error()
	if ge != nil {
		msg = ge.Msg
	}
	hint := "nothing was created; start it again"
	if ge != nil && ge.Temporary {
		hint = "nothing was created; the same start with the same --idempotency-key goes on from what the provider already has"
	}
	return &uploadError{err: errs.Failed(CodeUploadFailed, "uploading input %s failed: %s", name, msg).WithHint("%s", hint), cause: ge}
}

func uploadCause(err error) *google.Error {
	var ue *uploadError
	if errors.As(err, &ue) {
		return ue.cause
	}
	return nil
}

// deleteUploads deletes the files j uploaded, unless it keeps them, and
// marks each one deleted in j; the caller records j (before the state
// that ends it: a terminal job is never written again). A failure is
// left as it is (the Files API also expires files on its own); a file
// already gone counts as deleted, so doing it again after a crash is
// harmless.
func (s *Service) deleteUploads(ctx context.Context, j *Job, cred credential) {
	if j.Options == nil || j.Options.KeepUploads {
		return
	}
	c := s.client(j, cred)
	for i := range j.Options.Inputs {
		rec := &j.Options.Inputs[i]
		if rec.File == "" || rec.Deleted {
			continue
		}
		if c.DeleteFile(ctx, rec.File) == nil {
			rec.Deleted = true
		}
	}
}

// errUploadTooLarge refuses an input beyond the upload bound.
func errUploadTooLarge(p string, size int64) error {
	return errs.Usage(CodeInputTooLarge, "input %s is %d bytes; the limit is %d per file (the Files API's)", p, size, int64(MaxUploadBytes)).
		WithHint("docs/research.md lists the input limits")
}

// resumeUploads is what a start finds under its idempotency key when the
// recorded job was interrupted while uploading: the start goes on with it.
type resumeUploads struct{ job *Job }

func (r *resumeUploads) Error() string {
	return "research job " + r.job.ID + " is uploading its inputs"
}

// sameInputs refuses to go on with a recorded job whose inputs are no
// longer the files it started with (size or type changed).
func sameInputs(old *Job, recs []InputRecord) error {
	if old.Options == nil || len(old.Options.Inputs) != len(recs) {
		return errs.Usage(CodeIdempotencyKeyReused, "idempotency key %q was used for research job %s with other inputs", old.IdempotencyKey, old.ID).WithJob(old.ID)
	}
	for i, r := range old.Options.Inputs {
		if r.Size != recs[i].Size || r.MimeType != recs[i].MimeType || r.Upload != recs[i].Upload {
			return errs.Usage(CodeInputChanged, "input %s is not the file research job %s began uploading (%d bytes of %s, now %d of %s)", r.Name, old.ID, r.Size, r.MimeType, recs[i].Size, recs[i].MimeType).WithJob(old.ID).
				WithHint("start it again with a new idempotency key")
		}
	}
	return nil
}

// uploadFailed ends a job whose uploads failed: not-sent (no create left),
// the files already uploaded deleted. An interruption of our own (the
// caller went away, a kill) leaves it uploading, to be resumed.
func (s *Service) uploadFailed(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, cred credential, err error) error {
	if ge := uploadCause(err); ctx.Err() != nil || (ge != nil && ge.Temporary) {
		return err
	}
	wctx := context.WithoutCancel(ctx)
	e := errs.As(err)
	j.State, j.ErrorCode, j.ErrorMessage = StateNotSent, string(errs.CodeOf(err)), err.Error()
	j.FinishedAt = ms(env.Now())
	j.Options.Uploading = false
	for i := range j.Options.Inputs {
		j.Options.Inputs[i].Progress = nil
	}
	s.deleteUploads(wctx, j, cred)
	if uerr := js.update(wctx, j, env.Now()); uerr != nil {
		return err
	}
	if e != nil {
		return &JobStateError{State: StateNotSent, Err: e.WithJob(j.ID)}
	}
	return err
}
