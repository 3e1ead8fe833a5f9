package core

import (
	"context"
	"net/http"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/oauth"
	"github.com/clawkit/clawkit/pkg/owner"
)

// The MCP OAuth profiles' writes (docs/mcp.md, "Login"): a login's
// tokens, a renewal and a logout change credentials.json, so they run
// where the home is owned, like auth add: in a live gateway, else in this
// process under the owner lock. A renewal runs there whole (the check
// that nobody renewed already, the token request, the save), so two
// processes renewing at once make one request and a rotated refresh
// token is never lost between a gateway and a command.
var (
	OpOAuthSave   = owner.Handle[OAuthSaveParams, OAuthProfile]{Name: "auth.oauth.save"}
	OpOAuthRenew  = owner.Handle[OAuthRenewParams, OAuthProfile]{Name: "auth.oauth.renew"}
	OpOAuthLogout = owner.Handle[OAuthLogoutParams, []auth.Public]{Name: "auth.oauth.logout"}
)

// OAuthSaveParams stores a login's profile (its secrets travel only over
// the private socket, or stay in-process).
type OAuthSaveParams struct {
	ID      string       `json:"id"`
	Profile auth.Profile `json:"profile"`
}

// OAuthRenewParams renews profile ID's access token unless the stored one
// is no longer the one whose account fingerprint is Stale.
type OAuthRenewParams struct {
	ID    string `json:"id"`
	Stale string `json:"stale"`
}

// OAuthLogoutParams names the profile(s) to remove: ID, or those of
// Server.
type OAuthLogoutParams struct {
	ID     string `json:"id,omitempty"`
	Server string `json:"server,omitempty"`
}

// OAuthProfile is a stored OAuth profile with its id (auth.Profile keeps
// its id outside its JSON).
type OAuthProfile struct {
	ID      string       `json:"id"`
	Profile auth.Profile `json:"profile"`
}

func checkOAuthSave(p OAuthSaveParams) (OAuthSaveParams, error) {
	p.Profile.ID = p.ID
	return p, oauth.CheckProfile(p.Profile)
}

func checkOAuthRenew(p OAuthRenewParams) error {
	if err := auth.ValidateID(p.ID); err != nil {
		return err
	}
	if len(p.Stale) != 16 || !isLowerHex(p.Stale) {
		return errs.Usage(errs.CodeInvalidParams, "stale is an account fingerprint: 16 lower-case hex digits")
	}
	return nil
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkOAuthLogout(p OAuthLogoutParams) error {
	if (p.ID == "") == (p.Server == "") {
		return errs.Usage(errs.CodeInvalidParams, "name the profile or the server, one of them")
	}
	if p.ID != "" {
		return auth.ValidateID(p.ID)
	}
	return nil
}

// admitOAuth refuses, before anything is created, a renewal or logout of
// a profile that does not exist (reading credentials.json changes
// nothing).
func admitOAuth(home, id, server string) error {
	s, err := auth.Load(home)
	if err != nil {
		return err
	}
	if id != "" {
		return oauth.Stored(s, id)
	}
	_, err = oauth.LogoutIn(s, "", server) // on this copy: only its refusal counts
	return err
}

func registerOAuth(r *owner.Registry) {
	OpOAuthSave.Register(r, owner.Op[OAuthSaveParams, OAuthProfile]{Write: true, FilesOnly: true, Check: checkOAuthSave,
		Run: func(ctx context.Context, env *owner.OpEnv, p OAuthSaveParams) (OAuthProfile, error) {
			_, err := editCredentialsOf(env, func(s *auth.Store) (bool, error) { return true, oauth.Put(s, p.Profile) })
			return OAuthProfile(p), err
		}})
	OpOAuthRenew.Register(r, owner.Op[OAuthRenewParams, OAuthProfile]{Write: true, FilesOnly: true, Check: owner.Refusals(checkOAuthRenew),
		Admit: func(pre owner.Pre, p OAuthRenewParams) error { return admitOAuth(pre.Home, p.ID, "") },
		Run: func(ctx context.Context, env *owner.OpEnv, p OAuthRenewParams) (OAuthProfile, error) {
			c := &oauth.Client{HTTP: &http.Client{}, Now: env.Now}
			var out auth.Profile
			_, err := editCredentialsOf(env, func(s *auth.Store) (bool, error) {
				q, save, err := c.RenewIn(ctx, s, p.ID, p.Stale, env.Fence.AssertCurrent)
				out = q
				return save, err
			})
			return OAuthProfile{ID: p.ID, Profile: out}, err
		}})
	OpOAuthLogout.Register(r, owner.Op[OAuthLogoutParams, []auth.Public]{Write: true, FilesOnly: true, Check: owner.Refusals(checkOAuthLogout),
		Admit: func(pre owner.Pre, p OAuthLogoutParams) error { return admitOAuth(pre.Home, p.ID, p.Server) },
		Run: func(ctx context.Context, env *owner.OpEnv, p OAuthLogoutParams) ([]auth.Public, error) {
			var removed []auth.Public
			_, err := editCredentialsOf(env, func(s *auth.Store) (bool, error) {
				var err error
				removed, err = oauth.LogoutIn(s, p.ID, p.Server)
				return err == nil, err
			})
			return removed, err
		}})
}

// editCredentialsOf is editCredentials for a change that may leave the
// file as it is (save false): the fence and the write happen only when it
// changed something.
func editCredentialsOf(env *owner.OpEnv, change func(*auth.Store) (save bool, err error)) (saved bool, err error) {
	path := filepath.Join(env.Home, auth.FileName)
	defer func() { err = classifyEdit(err, auth.WriteFailed, path) }()
	err = fsx.EditLocked(path, func() error {
		s, err := auth.Load(env.Home)
		if err != nil {
			return err
		}
		save, err := change(s)
		if err != nil || !save {
			return err
		}
		if err := env.Fence.AssertCurrent(); err != nil {
			return err
		}
		if err := env.BeginWrite(); err != nil { // the write fence, right before the file is replaced
			return err
		}
		saved = true
		return s.Save()
	})
	return saved, err
}
