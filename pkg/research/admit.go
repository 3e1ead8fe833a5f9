package research

import (
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// Admission checks (owner.Method.Admit): the parts of each operation's
// validation that need no state, run by the offline executor before it
// creates the home or the database. A start with research disabled, or a
// poll of a malformed job id, is refused without leaving a home behind.
// The operations repeat every check themselves.

func (s *Service) admitStart(home string, raw json.RawMessage) error {
	p, err := decode[StartParams](raw)
	if err != nil {
		return err
	}
	_, _, _, err = s.checkStart(home, &p, func() (Settings, error) { return LoadSettings(home, s.getenv) })
	return err
}

func admitJob(_ string, raw json.RawMessage) error {
	p, err := decode[JobParams](raw)
	if err != nil {
		return err
	}
	return checkJobRef(p)
}

func admitWait(_ string, raw json.RawMessage) error {
	p, err := decode[WaitParams](raw)
	if err != nil {
		return err
	}
	return checkJobRef(p.JobParams)
}

// checkJobRef validates the caller and the job id or handle of a call.
func checkJobRef(p JobParams) error {
	if err := p.Caller.defaults(); err != nil {
		return err
	}
	if p.Job != "" {
		if !ValidJobID(p.Job) {
			return errInvalidJobID(p.Job)
		}
		return nil
	}
	if err := google.CheckHandle(p.Handle); err != nil {
		return errs.Usage("invalid_handle", "invalid handle: %v", err)
	}
	return nil
}
