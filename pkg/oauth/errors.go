package oauth

import (
	"errors"

	"github.com/clawkit/clawkit/pkg/errs"
)

func asErr(err error, e **errs.Error) bool { return errors.As(err, e) }
