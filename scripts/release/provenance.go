package main

// Provenance (docs/release.md, "Provenance"): an in-toto Statement v1
// whose predicate is SLSA Provenance v1, naming every archive and package
// with its SHA-256, the commit they were built from, the builder and the
// tool versions. It holds nothing that changes between two builds of the
// same commit (no start time, no host name, no invocation id), so the
// two-clone check compares it byte for byte.

import (
	"encoding/json"
	"sort"
)

const (
	inTotoStatementType = "https://in-toto.io/Statement/v1"
	slsaProvenanceType  = "https://slsa.dev/provenance/v1"
	// buildType names this build's recipe: the documented `make release`.
	buildType = "https://github.com/clawkit/clawkit/blob/main/docs/release.md#provenance"
	// defaultBuilderID is `make release` run by scripts/release; a real
	// release workflow passes its own (-builder-id).
	defaultBuilderID = "https://github.com/clawkit/clawkit/scripts/release"
	sourceURI        = "git+https://github.com/clawkit/clawkit"
)

type statement struct {
	Type          string     `json:"_type"`
	Subject       []subject  `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     provenance `json:"predicate"`
}

type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type provenance struct {
	BuildDefinition struct {
		BuildType            string               `json:"buildType"`
		ExternalParameters   map[string]any       `json:"externalParameters"`
		InternalParameters   map[string]any       `json:"internalParameters"`
		ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID      string            `json:"id"`
			Version map[string]string `json:"version"`
		} `json:"builder"`
	} `json:"runDetails"`
}

type resourceDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest"`
}

// provenanceInput is what the statement records.
type provenanceInput struct {
	facts     facts
	goVersion string
	builderID string
	targets   []string
	subjects  map[string]string // file name -> SHA-256 hex
	tools     map[string]string // tool -> version
}

// buildProvenance renders the statement: indented JSON, subjects sorted by
// name, map keys sorted (encoding/json), a final newline.
func buildProvenance(in provenanceInput) ([]byte, error) {
	var st statement
	st.Type = inTotoStatementType
	st.PredicateType = slsaProvenanceType
	names := make([]string, 0, len(in.subjects))
	for n := range in.subjects {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st.Subject = append(st.Subject, subject{Name: n, Digest: map[string]string{"sha256": in.subjects[n]}})
	}
	p := &st.Predicate
	p.BuildDefinition.BuildType = buildType
	p.BuildDefinition.ExternalParameters = map[string]any{
		"source":  sourceURI + "@" + in.facts.commit,
		"version": in.facts.version,
		"targets": in.targets,
	}
	p.BuildDefinition.InternalParameters = map[string]any{
		"goVersion":       in.goVersion,
		"sourceDateEpoch": in.facts.epoch,
		"dirty":           in.facts.dirty == "true",
		"env":             map[string]string{"CGO_ENABLED": "0", "GOAMD64": "v1", "GOARM64": "v8.0"},
		"goBuildFlags":    "-trimpath -buildvcs=false -mod=readonly -ldflags=-s -w -buildid=",
	}
	p.BuildDefinition.ResolvedDependencies = []resourceDescriptor{
		{URI: sourceURI, Digest: map[string]string{"gitCommit": in.facts.commit}},
	}
	p.RunDetails.Builder.ID = in.builderID
	p.RunDetails.Builder.Version = map[string]string{"go": in.goVersion}
	for k, v := range in.tools {
		p.RunDetails.Builder.Version[k] = v
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
