package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// BuildInfo is the version clawkit reports: the module version and the VCS
// revision the binary was built from, when the toolchain recorded them.
type BuildInfo struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
}

// ReadBuildInfo reads debug.ReadBuildInfo into a BuildInfo.
func ReadBuildInfo() BuildInfo {
	bi := BuildInfo{Module: "github.com/clawkit/clawkit", Version: "(devel)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return bi
	}
	bi.GoVersion = info.GoVersion
	if info.Main.Path != "" {
		bi.Module = info.Main.Path
	}
	if info.Main.Version != "" {
		bi.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Revision = s.Value
		case "vcs.time":
			bi.Time = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	return bi
}

func versionString() string {
	bi := ReadBuildInfo()
	s := fmt.Sprintf("clawkit %s", bi.Version)
	if bi.Revision != "" {
		s += " " + bi.Revision
		if bi.Modified && !strings.HasSuffix(bi.Version, "+dirty") {
			s += " (modified)"
		}
	}
	return s
}

// VersionCmd prints the version.
type VersionCmd struct{}

func (VersionCmd) Run(env *Env) error {
	out := env.Out
	return out.Result(ReadBuildInfo(), func(w io.Writer) { fmt.Fprintln(w, versionString()) })
}
