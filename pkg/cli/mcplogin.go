package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/oauth"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// MCPLoginCmd is `clawkit mcp login URL` (docs/mcp.md, "Login").
type MCPLoginCmd struct {
	URL               string        `arg:"" help:"The MCP server's URL (https, or http on a loopback address)."`
	Grant             string        `help:"authorization-code (a browser step), client-credentials (machine to machine, CI), jwt-bearer (a workload identity token such as a CI provider's OIDC token, from --assertion-stdin) or cross-app (enterprise-managed: the enterprise IdP's ID token exchanged for an ID-JAG)." default:"authorization-code" enum:"authorization-code,client-credentials,jwt-bearer,cross-app"`
	AssertionStdin    bool          `name:"assertion-stdin" help:"With --grant jwt-bearer: read the workload identity token (a JWT) from standard input."`
	IDPTokenURL       string        `name:"idp-token-url" help:"With --grant cross-app: the enterprise IdP's token endpoint, where the ID token is exchanged for an ID-JAG (RFC 8693)." placeholder:"URL"`
	IDPIssuer         string        `name:"idp-issuer" help:"With --grant cross-app, instead of --idp-token-url: the enterprise IdP's issuer, whose metadata names its token endpoint." placeholder:"URL"`
	IDPClientID       string        `name:"idp-client-id" help:"With --grant cross-app: clawkit's client id at the enterprise IdP." placeholder:"ID"`
	IDPSecretStdin    bool          `name:"idp-client-secret-stdin" help:"With --grant cross-app: read the IdP client's secret from a line of standard input (after the ID token's, when --id-token-stdin)."`
	IDTokenFile       string        `name:"id-token-file" help:"With --grant cross-app: the ID token the enterprise IdP issued you, in a file only you can read (mode 0600)." placeholder:"FILE"`
	IDTokenStdin      bool          `name:"id-token-stdin" help:"With --grant cross-app: read the ID token from the first line of standard input."`
	ClientID          string        `name:"client-id" help:"A client id registered with the authorization server beforehand." placeholder:"ID"`
	ClientSecretStdin bool          `name:"client-secret-stdin" help:"Read the pre-registered client's secret from the first line of standard input."`
	ClientMetadataURL string        `name:"client-metadata-url" help:"Use this Client ID Metadata Document URL as the client id where the server accepts them." placeholder:"URL"`
	PrivateKey        string        `name:"private-key" help:"With --grant client-credentials: authenticate with private_key_jwt (RFC 7523), signing with this PEM key file." placeholder:"FILE"`
	PrivateKeyStdin   bool          `name:"private-key-stdin" help:"Like --private-key, the PEM key read from standard input."`
	SigningAlg        string        `name:"signing-alg" help:"The private key's JWS algorithm (default: from the key)." enum:",ES256,RS256" default:""`
	Scope             []string      `help:"Request these scopes instead of the server's (repeatable)." sep:"none" placeholder:"SCOPE"`
	NoBrowser         bool          `name:"no-browser" help:"Print the authorization URL and read the address the browser is sent to from standard input (SSH, containers)."`
	LoginTimeout      time.Duration `name:"login-timeout" help:"How long to wait for the browser step." default:"5m"`
	RequestTimeout    time.Duration `name:"request-timeout" help:"Bound of each metadata, registration and token request." default:"30s"`
	MaxResponseBytes  int64         `name:"max-response-bytes" help:"Largest metadata, registration or token response." default:"262144" placeholder:"BYTES"`
	Profile           string        `help:"Store the tokens under this profile id (default: one per issuer and resource)." placeholder:"ID"`
}

// MCPLogoutCmd is `clawkit mcp logout URL`.
type MCPLogoutCmd struct {
	URL     string `arg:"" optional:"" help:"The MCP server's URL."`
	Profile string `help:"Remove this OAuth profile instead." placeholder:"ID"`
}

// LoginResult is what mcp login prints: the profile, never a token.
type LoginResult struct {
	Profile auth.Public `json:"profile"`
}

func oauthClient(timeout time.Duration, max int64, now func() time.Time) *oauth.Client {
	return &oauth.Client{HTTP: &http.Client{}, Timeout: timeout, MaxBytes: max, Now: now}
}

// Run runs `clawkit mcp login`.
func (c *MCPLoginCmd) Run(env *Env) error {
	if err := positive("--login-timeout", int64(c.LoginTimeout)); err != nil {
		return err
	}
	if err := positive("--request-timeout", int64(c.RequestTimeout)); err != nil {
		return err
	}
	if err := positive("--max-response-bytes", c.MaxResponseBytes); err != nil {
		return err
	}
	if _, err := oauth.CanonicalResource(c.URL); err != nil {
		return err
	}
	if err := oauth.CheckEndpoint(c.URL, "MCP server URL"); err != nil {
		return err
	}
	if c.Profile != "" {
		if err := auth.ValidateID(c.Profile); err != nil {
			return err
		}
	}
	if c.ClientMetadataURL != "" {
		if err := oauth.CheckClientMetadataURL(c.ClientMetadataURL); err != nil {
			return err
		}
	}
	cc := c.Grant == "client-credentials"
	wif := c.Grant == "jwt-bearer"
	xaa := c.Grant == "cross-app"
	if err := c.checkCrossApp(xaa); err != nil {
		return err
	}
	if wif != c.AssertionStdin {
		return errs.Usage(CodeUsage, "--grant jwt-bearer and --assertion-stdin go together").
			WithHint("printf '%%s\\n' \"$ID_TOKEN\" | clawkit mcp login URL --grant jwt-bearer --client-id ID --assertion-stdin")
	}
	if wif && (c.ClientSecretStdin || keyedFlags(c) || c.NoBrowser || c.ClientID == "") {
		return errs.Usage(CodeUsage, "--grant jwt-bearer takes --client-id and the token on stdin, nothing else")
	}
	keyed := c.PrivateKey != "" || c.PrivateKeyStdin
	switch {
	case c.ClientSecretStdin && c.ClientID == "":
		return errs.Usage(CodeUsage, "--client-secret-stdin needs --client-id")
	case keyed && !cc:
		return errs.Usage(CodeUsage, "--private-key and --private-key-stdin apply to --grant client-credentials")
	case c.PrivateKey != "" && c.PrivateKeyStdin:
		return errs.Usage(CodeUsage, "give the private key with one of --private-key FILE or --private-key-stdin")
	case cc && c.ClientID == "":
		return errs.Usage(CodeUsage, "--grant client-credentials needs --client-id").
			WithHint("with --client-secret-stdin, or --private-key FILE for private_key_jwt")
	case cc && !c.ClientSecretStdin && !keyed:
		return errs.Usage(CodeUsage, "--grant client-credentials needs the client's secret (--client-secret-stdin) or key (--private-key FILE)")
	case cc && c.ClientSecretStdin && keyed:
		return errs.Usage(CodeUsage, "give one of --client-secret-stdin or a private key")
	case cc && c.NoBrowser:
		return errs.Usage(CodeUsage, "--no-browser applies to --grant authorization-code")
	case c.PrivateKeyStdin && c.NoBrowser:
		return errs.Usage(CodeUsage, "--private-key-stdin and --no-browser both read standard input")
	}
	in := bufio.NewReader(env.Stdin)
	var assertion string
	if wif {
		line, err := in.ReadString('\n')
		if err != nil && err != io.EOF {
			return errs.Failed(errs.CodeStdinFailed, "cannot read standard input: %v", err)
		}
		assertion = strings.TrimSpace(line)
		if strings.Count(assertion, ".") != 2 {
			return errs.Usage(errs.CodeEmptySecret, "standard input holds no JWT").WithHint("pipe the workload identity token (header.payload.signature) into the command")
		}
		if err := auth.CheckSecret("the identity token", assertion); err != nil {
			return err
		}
	}
	var cross *oauth.CrossApp
	if xaa {
		x, err := c.readCrossApp(in, env.Now())
		if err != nil {
			return err
		}
		cross = x
	}
	reg := oauth.Registration{ClientID: c.ClientID, ClientMetadataURL: c.ClientMetadataURL, SigningAlg: c.SigningAlg, Assertion: assertion}
	if c.ClientSecretStdin {
		line, err := in.ReadString('\n')
		if err != nil && err != io.EOF {
			return errs.Failed(errs.CodeStdinFailed, "cannot read standard input: %v", err)
		}
		secret := strings.TrimSpace(line)
		if secret == "" {
			return errs.Usage(errs.CodeEmptySecret, "no client secret on standard input").WithHint("pipe the secret into the command")
		}
		if err := auth.CheckSecret("the client secret", secret); err != nil {
			return err
		}
		reg.ClientSecret = secret
	}
	if keyed {
		var src io.Reader
		if c.PrivateKeyStdin {
			src = in
		}
		pemText, alg, err := oauth.ReadPrivateKey(c.PrivateKey, src, c.SigningAlg)
		if err != nil {
			return err
		}
		reg.PrivateKey, reg.SigningAlg = pemText, alg
	}
	// A home that cannot be resolved is refused before the browser step.
	if _, err := env.HomeDir(); err != nil {
		return err
	}
	cl := oauthClient(c.RequestTimeout, c.MaxResponseBytes, env.Now)
	ch, err := cl.Probe(env.Ctx, c.URL)
	if err != nil {
		return err
	}
	opts := oauth.LoginOptions{ServerURL: c.URL, Challenge: ch, Registration: reg, Scopes: c.Scope, Prompt: env.Out.Stderr, Timeout: c.LoginTimeout}
	if cc {
		opts.Grant = oauth.GrantClientCredentials
	} else if wif {
		opts.Grant = oauth.GrantJWTBearer
	} else if xaa {
		opts.Grant, opts.CrossApp = oauth.GrantJWTBearer, cross
	} else if c.NoBrowser {
		opts.Paste = in
	} else if open, ok := oauth.SystemOpener(env.Getenv); ok {
		opts.Open = open
	}
	res, err := cl.Login(env.Ctx, opts)
	if err != nil {
		return err
	}
	p, err := routedKeeper{env}.Save(env.Ctx, oauth.ProfileOf(c.Profile, res, env.Now()))
	if err != nil {
		return err
	}
	pub := p.Public()
	return env.Out.Result(LoginResult{Profile: pub}, func(w *Printer) {
		fmt.Fprintf(w, "logged in to %s as profile %s (issuer %s", termsafe.Text(c.URL), pub.ID, termsafe.Text(pub.Issuer))
		if len(pub.Scopes) > 0 {
			fmt.Fprintf(w, ", scopes %s", termsafe.Text(strings.Join(pub.Scopes, " ")))
		}
		if !pub.ExpiresAt.IsZero() {
			fmt.Fprintf(w, ", expires %s", pub.ExpiresAt.Format(time.RFC3339))
		}
		fmt.Fprintln(w, ")")
	})
}

// Run runs `clawkit mcp logout`.
func (c *MCPLogoutCmd) Run(env *Env) error {
	if (c.URL == "") == (c.Profile == "") {
		return errs.Usage(CodeUsage, "give the server's URL or --profile ID")
	}
	removed, err := core.OpOAuthLogout.Call(env.Ctx, env, core.OAuthLogoutParams{ID: c.Profile, Server: c.URL})
	if err != nil {
		return err
	}
	return env.Out.Result(removed, func(w *Printer) {
		for _, p := range removed {
			fmt.Fprintf(w, "removed %s (%s)\n", p.ID, termsafe.Text(p.Resource))
		}
	})
}

func keyedFlags(c *MCPLoginCmd) bool { return c.PrivateKey != "" || c.PrivateKeyStdin }

// crossAppHint is the shape of a cross-app login, for the usage errors.
const crossAppHint = "clawkit mcp login URL --grant cross-app --idp-token-url URL|--idp-issuer URL --idp-client-id ID --id-token-file FILE --client-id ID [--client-secret-stdin]"

// checkCrossApp holds the flags of --grant cross-app (docs/mcp.md,
// "Login") to their shape before anything is read or sent: the IdP's
// token endpoint and client, one source for the ID token, clawkit's
// client at the MCP authorization server, nothing of the other grants.
func (c *MCPLoginCmd) checkCrossApp(xaa bool) error {
	idp := c.IDPTokenURL != "" || c.IDPIssuer != "" || c.IDPClientID != "" || c.IDPSecretStdin || c.IDTokenFile != "" || c.IDTokenStdin
	switch {
	case !xaa && idp:
		return errs.Usage(CodeUsage, "--idp-token-url, --idp-issuer, --idp-client-id, --idp-client-secret-stdin, --id-token-file and --id-token-stdin apply to --grant cross-app").
			WithHint("%s", crossAppHint)
	case !xaa:
		return nil
	case (c.IDPTokenURL == "") == (c.IDPIssuer == ""):
		return errs.Usage(CodeUsage, "--grant cross-app needs one of --idp-token-url (the enterprise IdP's token endpoint) or --idp-issuer (its issuer)").WithHint("%s", crossAppHint)
	case c.IDPClientID == "":
		return errs.Usage(CodeUsage, "--grant cross-app needs --idp-client-id (clawkit's client at the IdP)").WithHint("%s", crossAppHint)
	case (c.IDTokenFile != "") == c.IDTokenStdin:
		return errs.Usage(CodeUsage, "--grant cross-app needs the ID token from one of --id-token-file FILE or --id-token-stdin").WithHint("%s", crossAppHint)
	case c.ClientID == "":
		return errs.Usage(CodeUsage, "--grant cross-app needs --client-id (clawkit's client at the MCP server's authorization server)").WithHint("%s", crossAppHint)
	case c.AssertionStdin || keyedFlags(c) || c.NoBrowser || c.ClientMetadataURL != "":
		return errs.Usage(CodeUsage, "--grant cross-app takes the IdP's flags, the ID token, --client-id and --client-secret-stdin; not --assertion-stdin, --private-key, --no-browser or --client-metadata-url").
			WithHint("%s", crossAppHint)
	}
	if c.IDPIssuer != "" {
		return oauth.CheckEndpoint(c.IDPIssuer, "IdP issuer")
	}
	return oauth.CheckEndpoint(c.IDPTokenURL, "IdP token endpoint")
}

// readCrossApp reads the IdP side of a cross-app login: the ID token
// (its file, else the first line of in) and the IdP client's secret (the
// next line of in), each checked as a secret is, the token's shape and
// expiry too.
func (c *MCPLoginCmd) readCrossApp(in *bufio.Reader, now time.Time) (*oauth.CrossApp, error) {
	x := &oauth.CrossApp{IDPTokenEndpoint: c.IDPTokenURL, IDPIssuer: c.IDPIssuer, IDPClientID: c.IDPClientID}
	var err error
	if c.IDTokenFile != "" {
		x.IDToken, err = oauth.ReadIDTokenFile(c.IDTokenFile)
	} else {
		x.IDToken, err = stdinLine(in)
	}
	if err != nil {
		return nil, err
	}
	if err := oauth.CheckIDToken(x.IDToken, now); err != nil {
		return nil, err
	}
	if err := auth.CheckSecret("the ID token", x.IDToken); err != nil {
		return nil, err
	}
	if c.IDPSecretStdin {
		if x.IDPClientSecret, err = stdinLine(in); err != nil {
			return nil, err
		}
		if x.IDPClientSecret == "" {
			return nil, errs.Usage(errs.CodeEmptySecret, "no IdP client secret on standard input").
				WithHint("pipe the secret into the command (after the ID token's line when --id-token-stdin)")
		}
		if err := auth.CheckSecret("the IdP client secret", x.IDPClientSecret); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// stdinLine is one line of standard input, trimmed.
func stdinLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && err != io.EOF {
		return "", errs.Failed(errs.CodeStdinFailed, "cannot read standard input: %v", err)
	}
	return strings.TrimSpace(line), nil
}

// oauthAuthorizer is the Authorizer of the OAuth profile for serverURL:
// the one named by --oauth, else the one logged in to that server (nil
// when there is none, or when --header sets Authorization itself).
func oauthAuthorizer(env *Env, home, serverURL, profile string, ownAuthorization bool) (*oauth.Authorizer, error) {
	if ownAuthorization {
		if profile != "" {
			return nil, errs.Usage(CodeUsage, "--oauth and --header Authorization=@PROFILE both set the Authorization header").
				WithHint("give one of them")
		}
		return nil, nil
	}
	p, ok, err := oauth.FindProfile(home, profile, serverURL)
	if err != nil || !ok {
		return nil, err
	}
	a := oauth.NewAuthorizer(oauthClient(oauth.DefaultTimeout, oauth.DefaultMaxBytes, env.Now), routedKeeper{env}, p)
	if open, ok := oauth.SystemOpener(env.Getenv); ok {
		a.Open = open
	}
	a.Prompt = env.Out.Stderr
	return a, nil
}

// routedKeeper writes OAuth profiles through the owner router
// (oauth.Keeper): a live gateway stores a login's tokens and renews them,
// else this process does under the owner lock (pkg/ops, auth.oauth.*).
type routedKeeper struct{ env *Env }

func (k routedKeeper) Save(ctx context.Context, p auth.Profile) (auth.Profile, error) {
	r, err := core.OpOAuthSave.Call(ctx, k.env, core.OAuthSaveParams{ID: p.ID, Profile: p})
	r.Profile.ID = r.ID
	return r.Profile, err
}

func (k routedKeeper) Renew(ctx context.Context, id, stale string) (auth.Profile, error) {
	r, err := core.OpOAuthRenew.Call(ctx, k.env, core.OAuthRenewParams{ID: id, Stale: stale})
	r.Profile.ID = r.ID
	return r.Profile, err
}
