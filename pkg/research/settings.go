package research

import (
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// ConfigPath is where the research activation lives in config.json.
const ConfigPath = "plugins.entries.google.config.research"

// EnvBaseURL overrides the provider base URL (proxies, tests).
const EnvBaseURL = "CLAWKIT_GOOGLE_BASE_URL"

// Settings is the activation config.
type Settings struct {
	Enabled   bool   `json:"enabled"`
	ProfileID string `json:"profileId,omitempty"`
	Agent     string `json:"agent,omitempty"`
	// BaseURL is the endpoint: the server URL and the API version.
	BaseURL    string `json:"baseUrl,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// apiVersionRE is the shape of a Gemini API version path segment.
var apiVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]*)?$`) })

// LoadSettings reads the activation from <home>/config.json (a missing
// file is an empty config) and applies the base URL override. It loads no
// credential. Unknown keys are refused rather than ignored.
func LoadSettings(home string, getenv func(string) string) (Settings, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return Settings{}, err
	}
	return SettingsFrom(cfg, getenv)
}

// SettingsFrom reads the activation from a loaded config (an operation's
// config snapshot) and applies the base URL override.
func SettingsFrom(cfg *config.Config, getenv func(string) string) (Settings, error) {
	var s Settings
	var raw map[string]any
	if _, err := cfg.Decode(ConfigPath, &raw); err != nil {
		return s, err
	}
	for k, v := range raw {
		bad := false
		switch k {
		case "enabled":
			b, ok := v.(bool)
			s.Enabled, bad = b, !ok
		case "profileId":
			str, ok := v.(string)
			s.ProfileID, bad = str, !ok
		case "agent":
			str, ok := v.(string)
			s.Agent, bad = str, !ok
		case "baseUrl":
			str, ok := v.(string)
			s.BaseURL, bad = str, !ok
		case "apiVersion":
			str, ok := v.(string)
			s.APIVersion, bad = str, !ok
		default:
			return s, errs.Failed(errs.CodeInvalidConfig, "unknown key %s.%s", ConfigPath, k).
				WithHint("supported keys: enabled, profileId, agent, baseUrl, apiVersion; remove it with clawkit config unset %s.%s", ConfigPath, k)
		}
		if bad {
			return s, errs.Failed(errs.CodeInvalidConfig, "%s.%s has the wrong type", ConfigPath, k).
				WithHint("fix it with clawkit config set %s.%s VALUE", ConfigPath, k)
		}
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvBaseURL); v != "" {
		s.BaseURL = v
	}
	if s.BaseURL == "" {
		s.BaseURL = google.DefaultServer
	}
	s.BaseURL = strings.TrimRight(s.BaseURL, "/")
	if err := google.CheckBaseURL(s.BaseURL); err != nil {
		return s, errs.Failed(errs.CodeInvalidConfig, "%v", err).WithHint("fix %s.baseUrl or %s", ConfigPath, EnvBaseURL)
	}
	if err := s.resolveVersion(); err != nil {
		return s, err
	}
	if s.Agent == "" {
		s.Agent = google.DefaultAgent
	}
	return s, nil
}

// resolveVersion makes BaseURL the endpoint. A base URL whose last path
// segment is an API version (…/v1beta, the form earlier releases
// documented) is the endpoint already, and apiVersion may only repeat it;
// otherwise apiVersion (default google.DefaultAPIVersion) is appended, as
// the SDKs join their base URL and API version.
func (s *Settings) resolveVersion() error {
	if s.APIVersion != "" && !apiVersionRE().MatchString(s.APIVersion) {
		return errs.Failed(errs.CodeInvalidConfig, "%s.apiVersion %q is not an API version (v1, v1beta, …)", ConfigPath, s.APIVersion).
			WithHint("clawkit config set %s.apiVersion v1 (or unset it for the default %s)", ConfigPath, google.DefaultAPIVersion)
	}
	u, _ := url.Parse(s.BaseURL)
	last := path.Base(u.Path)
	if apiVersionRE().MatchString(last) {
		if s.APIVersion != "" && s.APIVersion != last {
			return errs.Failed(errs.CodeInvalidConfig, "the base URL %s ends in API version %s but %s.apiVersion is %s", s.BaseURL, last, ConfigPath, s.APIVersion).
				WithHint("give the version once: a base URL without it, or no %s.apiVersion", ConfigPath)
		}
		s.APIVersion = last
		return nil
	}
	if s.APIVersion == "" {
		s.APIVersion = google.DefaultAPIVersion
	}
	s.BaseURL += "/" + s.APIVersion
	return nil
}

// requireEnabled refuses when research is not activated.
func (s Settings) requireEnabled() error {
	if !s.Enabled {
		return errs.Refused(CodeResearchDisabled, "Google research is not enabled").
			WithHint("create an API-key profile with 'clawkit auth add google:default --provider google --api-key-env GEMINI_API_KEY' (the key in $GEMINI_API_KEY), then run: clawkit config set %s '{\"enabled\":true,\"profileId\":\"google:default\"}'", ConfigPath)
	}
	if s.ProfileID == "" {
		return errs.Refused(CodeProfileNotConfigured, "no auth profile is configured for Google research").
			WithHint("clawkit config set %s.profileId PROFILE (an API-key profile: 'clawkit auth add google:default --provider google --api-key-env GEMINI_API_KEY')", ConfigPath)
	}
	return nil
}

// credential is the pinned API key of a job or a start.
type credential struct {
	ProfileID string
	Account   string
	secret    string
}

// loadCredential loads the configured profile and checks it may be used:
// it exists, is a google profile and an API key (OAuth tokens are refused).
func loadCredential(home string, s Settings) (credential, error) {
	as, err := auth.Load(home)
	if err != nil {
		return credential{}, err
	}
	p, ok := as.Get(s.ProfileID)
	if !ok {
		return credential{}, errs.Refused(CodeProfileMissing, "auth profile %q does not exist", s.ProfileID).
			WithHint("add it: clawkit auth add %s --provider google --api-key-env GEMINI_API_KEY", s.ProfileID)
	}
	if p.Provider != "google" {
		return credential{}, errs.Refused(CodeProfileWrongProvider, "auth profile %q is for provider %q, not google", s.ProfileID, p.Provider).
			WithHint("configure a google API-key profile in %s.profileId", ConfigPath)
	}
	if p.Kind != auth.KindAPIKey {
		return credential{}, errs.Refused(CodeOauthProfileRejected, "auth profile %q is a %s credential; managed research needs an API key", s.ProfileID, p.Kind).
			WithHint("add an API-key profile: clawkit auth add PROFILE --provider google --api-key-env GEMINI_API_KEY")
	}
	return credential{ProfileID: s.ProfileID, Account: p.Account(), secret: p.Secret}, nil
}

// DescribeFrom reports the service from a loaded config (an operation's
// config snapshot) alone: no credential is loaded and no request is
// made.
func DescribeFrom(cfg *config.Config, getenv func(string) string) (Describe, error) {
	d := Describe{
		Service:  ServiceID,
		Provider: "google",
		Managed:  true,
		Kind:     "managed-deep-research",
		Constraints: DescribeConstraints{
			DescribeConstraintsV1: DescribeConstraintsV1{
				OutputFormats:  []string{"markdown"},
				MaxReportBytes: HardReportMax,
				AsOf:           false,
			},
			Plan:     true,
			FollowUp: true,
			Inputs: InputConstraints{
				MimeTypes: append(append([]string{}, google.DocumentMimeTypes...), google.ImageMimeTypes...),
				MaxFiles:  MaxInputs, MaxFileBytes: MaxUploadBytes, MaxTotalBytes: MaxInputs * MaxUploadBytes,
				MaxInlineFileBytes: MaxInputBytes, MaxInlineTotalBytes: MaxInputTotalBytes,
				PageTypes: typesWithRange("pages"), SheetTypes: typesWithRange("sheet"),
				PageLayers: google.PageLayers, SheetLayers: google.SheetLayers, Resolutions: google.MediaResolutions,
			},
			Tools:         []string{"fileSearch", "urlContext", "mcpServers"},
			Visualization: []string{VisualizationAuto, VisualizationOff},
			Figures:       FigureConstraints{MimeTypes: []string{"image/png", "image/jpeg", "image/gif", "image/webp"}, MaxCount: MaxFigures, MaxBytes: MaxFigureBytes, MaxTotalBytes: MaxFigureTotalBytes},
		},
		Unsupported: []string{"asOf"},
		Contracts:   Contracts,
	}
	d.Constraints.MaxTokens = MaxTokenBudget
	s, err := SettingsFrom(cfg, getenv)
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
		d.Agent = google.DefaultAgent
		return d, nil
	}
	d.Enabled, d.ProfileID, d.Agent = s.Enabled, s.ProfileID, s.Agent
	if err := s.requireEnabled(); err != nil {
		d.Problems = append(d.Problems, err.Error())
	}
	return d, nil
}

// sharedHTTP is built on first use, not at start-up of every command.
// Its requests are reported to the telemetry of their context (a
// gateway's metrics and debug log; nothing offline).
var sharedHTTP = sync.OnceValue(func() *http.Client {
	c := google.NewHTTPClient()
	c.Transport = owner.ObserveTransport(c.Transport)
	return c
})

func defaultHTTP() *http.Client { return sharedHTTP() }
