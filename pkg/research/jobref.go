package research

import (
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// jobRef names a job by its id or by its provider handle, as checkRef
// accepted it. Only checkRef makes one from a caller's text (an
// operation's Check: checkJobRef, a start's follow-up; the envelope path
// of research rpc runs the same Check), and ownRef from an id this home's
// own store just gave, so lookup, which takes a jobRef, never checks the
// shape again (docs/architecture.md, "Checks per call"). The zero value
// is "not checked": lookup refuses it.
type jobRef struct{ id, handle string }

// checkRef is the one check of a job reference's shape: a job id when
// id is given, else a provider handle.
func checkRef(id, handle string) (jobRef, error) {
	if id != "" {
		if !ValidJobID(id) {
			return jobRef{}, errInvalidJobID(id)
		}
		return jobRef{id: id}, nil
	}
	if err := google.CheckHandle(handle); err != nil {
		return jobRef{}, errs.Usage(CodeInvalidHandle, "invalid handle: %v", err)
	}
	return jobRef{handle: handle}, nil
}

// ownRef is the reference of a job this call has just created or
// approved: its id came from this home's store, not from a caller.
func ownRef(id string) jobRef { return jobRef{id: id} }

// CheckJob is the job operations' Check (checkJobRef), for callers of
// Poll, Wait, Cancel or Reject outside this package (tests driving a
// Service directly): those trust their parameters.
func CheckJob(p JobParams) (JobParams, error) { return checkJobRef(p) }
