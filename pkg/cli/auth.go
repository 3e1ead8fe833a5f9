package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// AuthCmd is `clawkit auth …`.
type AuthCmd struct {
	Add    AuthAddCmd    `cmd:"" help:"Add an auth profile (API key or OAuth token)."`
	List   AuthListCmd   `cmd:"" help:"List profiles (never prints secrets)."`
	Remove AuthRemoveCmd `cmd:"" help:"Remove a profile."`
}

// AuthAddCmd adds a profile.
type AuthAddCmd struct {
	Profile     string `arg:"" help:"Profile id, e.g. google:default."`
	Provider    string `help:"Provider: google, postgres for the database password (profile id database), or mcp for an MCP server's HTTP header value (kind header or bearer; mcp --header, research --mcp-header)." required:"" enum:"google,postgres,mcp"`
	Kind        string `help:"api-key or oauth; header (one header value) or bearer (a token, sent as Bearer TOKEN), read like an API key." default:"api-key" enum:"api-key,oauth,header,bearer"`
	APIKeyEnv   string `name:"api-key-env" help:"Read the API key from this environment variable." placeholder:"VAR"`
	APIKeyStdin bool   `name:"api-key-stdin" help:"Read the API key from standard input."`
	TokenStdin  bool   `name:"token-stdin" help:"Read the OAuth token from standard input."`
	Replace     bool   `help:"Replace an existing profile of the same id."`
}

// Run runs `clawkit auth add`.
func (c *AuthAddCmd) Run(env *Env) error {
	ctx := env.Ctx
	var secret string
	switch {
	case c.Kind == auth.KindOAuth:
		if !c.TokenStdin || c.APIKeyEnv != "" || c.APIKeyStdin {
			return errs.Usage(CodeUsage, "an oauth profile takes its token from --token-stdin").
				WithHint("clawkit auth add %s --provider %s --kind oauth --token-stdin < token", c.Profile, c.Provider)
		}
		s, err := readSecret(env.Stdin)
		if err != nil {
			return err
		}
		secret = s
	case c.APIKeyEnv != "" && !c.APIKeyStdin && !c.TokenStdin:
		secret = env.Getenv(c.APIKeyEnv)
		if secret == "" {
			return errs.Usage(errs.CodeEmptySecret, "environment variable %s is empty or unset", c.APIKeyEnv).
				WithHint("export %s=... first, or use --api-key-stdin", c.APIKeyEnv)
		}
	case c.APIKeyStdin && c.APIKeyEnv == "" && !c.TokenStdin:
		s, err := readSecret(env.Stdin)
		if err != nil {
			return err
		}
		secret = s
	default:
		return errs.Usage(CodeUsage, "give the API key with exactly one of --api-key-env VAR or --api-key-stdin").
			WithHint("clawkit auth add %s --provider %s --api-key-env GEMINI_API_KEY", c.Profile, c.Provider)
	}
	pub, err := core.OpAuthAdd.Call(ctx, env, core.AuthAddParams{ID: c.Profile, Provider: c.Provider, Kind: c.Kind, Secret: secret, Replace: c.Replace})
	if err != nil {
		return err
	}
	return env.Out.Result(pub, func(w *Printer) {
		fmt.Fprintf(w, "added %s (%s %s, account %s)\n", pub.ID, pub.Provider, pub.Kind, pub.Account)
	})
}

// readSecret reads one secret from stdin: surrounding white space (the
// trailing newline of `echo`) is not part of it. More than the bound is
// refused whole, never cut to fit; what it holds is auth.CheckSecret's.
func readSecret(r io.Reader) (string, error) {
	const max = auth.MaxSecretBytes + 4<<10 // room for surrounding white space
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", errs.Failed(errs.CodeStdinFailed, "cannot read standard input: %v", err)
	}
	if len(b) > max {
		return "", errs.Usage(errs.CodeInvalidSecret, "standard input holds more than %d bytes; a credential is at most %d", max, auth.MaxSecretBytes).
			WithHint("pipe the key or token itself, not a file that holds more")
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errs.Usage(errs.CodeEmptySecret, "no credential on standard input").WithHint("pipe the key or token into the command")
	}
	return s, nil
}

// AuthListCmd lists profiles.
type AuthListCmd struct{}

// Run runs `clawkit auth list`.
func (c *AuthListCmd) Run(env *Env) error {
	ctx := env.Ctx
	out, err := core.OpAuthList.Call(ctx, env, core.None{})
	if err != nil {
		return err
	}
	if out == nil {
		out = []auth.Public{}
	}
	return env.Out.Result(out, func(w *Printer) {
		tw := w.Table(0, 4, 2)
		fmt.Fprintln(tw, "PROFILE\tPROVIDER\tKIND\tACCOUNT")
		for _, p := range out {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Provider, p.Kind, p.Account)
		}
		tw.Flush()
		// OAuth profiles (mcp login): where the token is from and for,
		// never the token.
		header := false
		for _, p := range out {
			if p.Issuer == "" {
				continue
			}
			if !header {
				fmt.Fprintln(w)
				tw = w.Table(0, 4, 2)
				fmt.Fprintln(tw, "OAUTH PROFILE\tISSUER\tRESOURCE\tSCOPES\tEXPIRES")
				header = true
			}
			scopes, expires := strings.Join(p.Scopes, " "), "-"
			if scopes == "" {
				scopes = "-"
			}
			if !p.ExpiresAt.IsZero() {
				expires = p.ExpiresAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, termsafe.Text(p.Issuer), termsafe.Text(p.Resource), termsafe.Text(scopes), expires)
		}
		if header {
			tw.Flush()
		}
	})
}

// AuthRemoveCmd removes a profile.
type AuthRemoveCmd struct {
	Profile string `arg:"" help:"Profile id."`
}

// Run runs `clawkit auth remove`.
func (c *AuthRemoveCmd) Run(env *Env) error {
	ctx := env.Ctx
	pub, err := core.OpAuthRemove.Call(ctx, env, core.AuthRemoveParams{ID: c.Profile})
	if err != nil {
		return err
	}
	return env.Out.Result(pub, func(w *Printer) { fmt.Fprintf(w, "removed %s\n", pub.ID) })
}
