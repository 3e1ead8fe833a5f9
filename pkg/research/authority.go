// Authority: who may act on a job, and with which credential. Every check
// here runs before any HTTP request.

package research

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// Caller is who asks: the custody identity compared with a job's binding.
type Caller struct {
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
}

func (c *Caller) defaults() error {
	if c.AgentID == "" {
		c.AgentID = store.DefaultAgent
	}
	if c.SessionKey == "" {
		c.SessionKey = store.DefaultSession
	}
	return store.ValidateIDs(c.AgentID, c.SessionKey)
}

// bind binds the caller's session to env's scope, waiting a bounded number
// of times while it is refreshing (reacquiring authority each time). A
// revoked session is refused at once.
func (s *Service) bind(ctx context.Context, env *owner.OpEnv, c Caller) (store.Session, error) {
	b := s.budgets()
	for attempt := 0; ; attempt++ {
		sess, err := env.BindSession(ctx, c.AgentID, c.SessionKey)
		if err == nil {
			return sess, nil
		}
		e := errs.As(err)
		if e == nil || e.Code != store.CodeSessionRefreshing || attempt >= b.RefreshRetries {
			return sess, err
		}
		if err := s.sleep(ctx, refreshWait(e, b)); err != nil {
			return sess, err
		}
	}
}

func refreshWait(e *errs.Error, b Budgets) time.Duration {
	d := time.Duration(e.RetryAfterMs) * time.Millisecond
	if d <= 0 {
		d = time.Second
	}
	if d > b.MaxRefreshWait {
		d = b.MaxRefreshWait
	}
	return d
}

// assertWithRefresh calls assert; while it reports a refreshing session it
// waits and re-checks, a bounded number of times.
func (s *Service) assertWithRefresh(ctx context.Context, assert func() error) error {
	b := s.budgets()
	for attempt := 0; ; attempt++ {
		err := assert()
		e := errs.As(err)
		if err == nil || e == nil || e.Code != store.CodeSessionRefreshing || attempt >= b.RefreshRetries {
			return err
		}
		if err := s.sleep(ctx, refreshWait(e, b)); err != nil {
			return err
		}
	}
}

// custody checks, before any HTTP request, that caller may act on j: the
// same agent and session, the session's incarnation unchanged since the
// job was bound, research still enabled, and the same profile, credential
// account and endpoint as at submission. It returns the pinned credential.
func (s *Service) custody(ctx context.Context, env *owner.OpEnv, j *Job, c Caller) (credential, error) {
	if err := checkCaller(j, c); err != nil {
		return credential{}, err
	}
	sess, err := s.bind(ctx, env, c)
	if err != nil {
		return credential{}, err
	}
	return s.jobAuthority(env, j, sess)
}

// checkCaller refuses a caller that is not the job's agent and session.
// It guards every job operation, including reading a finished job's
// report, and needs no HTTP.
func checkCaller(j *Job, c Caller) error {
	if c.AgentID != j.AgentID || c.SessionKey != j.SessionKey {
		return errs.Refused(CodeForeignOwner, "research job %s belongs to session %s of agent %s, not %s of %s", j.ID, j.SessionKey, j.AgentID, c.SessionKey, c.AgentID).WithJob(j.ID).
			WithHint("use --agent %s --session %s, the identity that started it", j.AgentID, j.SessionKey)
	}
	return nil
}

// jobAuthority is the part of custody that does not depend on the caller:
// the session's incarnation, then the pinned credential (credentialFor).
func (s *Service) jobAuthority(env *owner.OpEnv, j *Job, sess store.Session) (credential, error) {
	if sess.Incarnation != j.SessionIncarnation {
		return credential{}, errs.Refused(CodeStaleOwner, "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, sess.Incarnation).WithJob(j.ID).
			WithHint("the session was reset; the job can no longer be polled or cancelled from it")
	}
	return credentialFor(j, s.loadAuthView(env))
}

// authView is the configuration and the configured credential, loaded
// once (per command, or per poller batch) and compared with each job's
// binding.
type authView struct {
	set     Settings
	setErr  error
	cred    credential
	credErr error
}

// loadAuthView returns the current config and credential view, with the
// environment the call sees (its caller's, through a gateway). It is
// cached on the identity (inode, size, mtime) of config.json and
// credentials.json and the base URL override: both files are only ever
// replaced by atomic renames, so any change gives a new identity and a
// fresh read, while the poller's batches cost two stat calls.
func (s *Service) loadAuthView(env *owner.OpEnv) *authView {
	home, getenv := env.Home, s.callEnv(env)
	key := fileIdentity(filepath.Join(home, config.FileName)) + "|" + fileIdentity(filepath.Join(home, auth.FileName)) + "|" + getenv(EnvBaseURL)
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if s.authHome == home && s.authKey == key && s.authView != nil {
		return s.authView
	}
	v := readAuthView(home, getenv)
	s.authHome, s.authKey, s.authView = home, key, v
	return v
}

func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf("%d:%d:%d", ino, fi.Size(), fi.ModTime().UnixNano())
}

func readAuthView(home string, getenv func(string) string) *authView {
	v := &authView{}
	v.set, v.setErr = LoadSettings(home, getenv)
	if v.setErr == nil {
		if v.setErr = v.set.requireEnabled(); v.setErr == nil {
			v.cred, v.credErr = loadCredential(home, v.set)
		}
	}
	return v
}

// credentialFor checks that research is still enabled with the job's
// profile, endpoint and credential account, and returns the credential.
func credentialFor(j *Job, v *authView) (credential, error) {
	if v.setErr != nil {
		return credential{}, v.setErr
	}
	if v.set.ProfileID != j.ProfileID {
		return credential{}, errs.Refused(CodeProfileSubstituted, "research job %s is pinned to profile %q; the configured profile is now %q", j.ID, j.ProfileID, v.set.ProfileID).WithJob(j.ID).
			WithHint("set %s.profileId back to %q to poll or cancel it", ConfigPath, j.ProfileID)
	}
	if v.set.BaseURL != j.BaseURL {
		return credential{}, errs.Refused(CodeEndpointChanged, "research job %s was submitted to %s; the configured endpoint is now %s", j.ID, j.BaseURL, v.set.BaseURL).WithJob(j.ID).
			WithHint("restore the endpoint (%s.baseUrl, %s.apiVersion or %s) the job was submitted to", ConfigPath, ConfigPath, EnvBaseURL)
	}
	if v.credErr != nil {
		return credential{}, v.credErr
	}
	if v.cred.Account != j.CredentialAccount {
		return credential{}, errs.Refused(CodeCredentialSubstituted, "profile %q now holds a different credential (account %s) than the one research job %s was submitted with (%s)", j.ProfileID, v.cred.Account, j.ID, j.CredentialAccount).WithJob(j.ID).
			WithHint("restore the original API key in profile %q; a job is only polled with the key that created it", j.ProfileID)
	}
	return v.cred, nil
}

// deliveryAuthority checks, without any HTTP, that the caller may receive
// a finished job's report: its session is usable and still at the
// incarnation the job was bound to. The session is bound to the scope, so
// AssertCurrent right before delivery re-checks it.
func (s *Service) deliveryAuthority(ctx context.Context, env *owner.OpEnv, j *Job, c Caller) error {
	sess, err := s.bind(ctx, env, c)
	if err != nil {
		return err
	}
	if sess.Incarnation != j.SessionIncarnation {
		return errs.Refused(CodeStaleOwner, "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, sess.Incarnation).WithJob(j.ID).
			WithHint("the session was reset; the job's report is not delivered to it (it stays under %s)", jobDir(env.Home, j.ID))
	}
	return nil
}

// providerAuthority reads the provider authority again (research enabled,
// the job's pinned profile, endpoint and credential account) and returns
// the credential. It is called immediately before every provider effect,
// after any wait, so a change made meanwhile refuses the effect.
func (s *Service) providerAuthority(env *owner.OpEnv, j *Job) (credential, error) {
	return credentialFor(j, s.loadAuthView(env))
}

// effectAuthority is the check right before an external effect: the owner
// fence and bound session (AssertCurrent), then the provider authority.
func (s *Service) effectAuthority(env *owner.OpEnv, j *Job) (credential, error) {
	if err := env.Fence.AssertCurrent(); err != nil {
		return credential{}, err
	}
	cred, err := s.providerAuthority(env, j)
	if err != nil {
		return credential{}, err
	}
	// From here the effect may happen: an error after it is no longer a
	// refusal before any effect (the gateway reports it as such).
	env.MarkEffect()
	return cred, nil
}

// describeAccess applies the session access policy to describe without
// creating anything: a revoked session is refused (exit 3), a session that
// does not exist is refused unless it is the default one (created on first
// use), and a refreshing session is waited for a bounded number of times,
// re-read each time, then reported as temporarily unavailable (exit 5).
func (s *Service) describeAccess(ctx context.Context, env *owner.OpEnv, c Caller) error {
	b := s.budgets()
	for attempt := 0; ; attempt++ {
		sess, err := env.Store.GetSession(ctx, c.AgentID, c.SessionKey)
		if err != nil {
			if errs.CodeOf(err) != errs.CodeSessionNotFound {
				return err
			}
			if c.AgentID == store.DefaultAgent && c.SessionKey == store.DefaultSession {
				return nil
			}
			e := errs.As(err)
			return errs.Refused(errs.CodeSessionNotFound, "%s", e.Message).WithHint("%s", e.Hint)
		}
		err = store.CheckSessionUsable(sess)
		e := errs.As(err)
		if err == nil || e == nil || e.Code != store.CodeSessionRefreshing || attempt >= b.RefreshRetries {
			return err
		}
		if err := s.sleep(ctx, refreshWait(e, b)); err != nil {
			return err
		}
	}
}

// settings reads the activation from the call's config snapshot
// (owner.OpEnv.Config, the snapshot): what the operation uses (endpoint, agent,
// profile) does not change if config.json changes during the call. The
// provider authority checks before each effect (providerAuthority) read
// the current files instead: a change can refuse an effect, never alter
// what the call uses.
func (s *Service) settings(env *owner.OpEnv) (Settings, error) {
	cfg, err := env.Config()
	if err != nil {
		return Settings{}, err
	}
	return SettingsFrom(cfg, s.callEnv(env))
}
