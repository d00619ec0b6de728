package lint

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/walk"
)

// SARIF 2.1.0 (OASIS), the subset GitHub code scanning reads: one run, the
// rule catalogue in tool.driver.rules, one result per finding located at
// the transcript line, partialFingerprints so code scanning tracks a
// finding across runs, and file errors as tool execution notifications.

// SARIFSchema is the URI written in $schema.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// InformationURI is the project page named in the SARIF driver.
const InformationURI = "https://github.com/ctxtool/ctxtool"

// FingerprintName is the partialFingerprints key of ctxtool's findings.
const FingerprintName = "ctxtoolFinding/v1"

type SARIFLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []SARIFRun `json:"runs"`
}

type SARIFRun struct {
	Tool        SARIFTool         `json:"tool"`
	Invocations []SARIFInvocation `json:"invocations"`
	Results     []SARIFResult     `json:"results"`
	ColumnKind  string            `json:"columnKind"`
}

type SARIFTool struct {
	Driver SARIFDriver `json:"driver"`
}

type SARIFDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []SARIFRule `json:"rules"`
}

type SARIFRule struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name"`
	ShortDescription     SARIFText         `json:"shortDescription"`
	FullDescription      SARIFText         `json:"fullDescription"`
	Help                 SARIFText         `json:"help"`
	DefaultConfiguration SARIFRuleConfig   `json:"defaultConfiguration"`
	Properties           map[string]string `json:"properties,omitempty"`
}

type SARIFRuleConfig struct {
	Enabled bool   `json:"enabled"`
	Level   string `json:"level"`
}

type SARIFText struct {
	Text string `json:"text"`
}

type SARIFInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []SARIFNotification `json:"toolExecutionNotifications,omitempty"`
}

type SARIFNotification struct {
	Level     string          `json:"level"`
	Message   SARIFText       `json:"message"`
	Locations []SARIFLocation `json:"locations,omitempty"`
}

type SARIFResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             SARIFText         `json:"message"`
	Locations           []SARIFLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	BaselineState       string            `json:"baselineState,omitempty"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type SARIFLocation struct {
	PhysicalLocation SARIFPhysical `json:"physicalLocation"`
}

type SARIFPhysical struct {
	ArtifactLocation SARIFArtifact `json:"artifactLocation"`
	Region           *SARIFRegion  `json:"region,omitempty"`
}

type SARIFArtifact struct {
	URI string `json:"uri"`
}

type SARIFRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// FileError is a file lint could not read.
type FileError struct {
	File string
	Err  string
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// SARIF builds the log for the given reports. version is ctxtool's.
func SARIF(reports []*Report, fileErrors []FileError, rs *RuleSet, version string) *SARIFLog {
	if rs == nil {
		rs = DefaultRuleSet()
	}
	index := map[string]int{}
	driver := SARIFDriver{Name: "ctxtool", Version: version, InformationURI: InformationURI}
	for i, r := range rules {
		index[r.ID] = i
		sev := rs.Severity(r.ID)
		conf := SARIFRuleConfig{Enabled: sev != Off, Level: sarifLevel(r.Severity)}
		if sev != Off {
			conf.Level = sarifLevel(sev)
		}
		rule := SARIFRule{ID: r.ID, Name: ruleName(r.ID),
			ShortDescription: SARIFText{Text: r.Summary}, FullDescription: SARIFText{Text: r.Summary},
			Help: SARIFText{Text: r.Remedy}, DefaultConfiguration: conf}
		if r.Fixable {
			rule.Properties = map[string]string{"fix": "ctxtool lint --fix"}
		}
		driver.Rules = append(driver.Rules, rule)
	}
	run := SARIFRun{Tool: SARIFTool{Driver: driver}, Results: []SARIFResult{}, ColumnKind: "utf16CodeUnits"}
	inv := SARIFInvocation{ExecutionSuccessful: len(fileErrors) == 0}
	for _, fe := range fileErrors {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, SARIFNotification{
			Level: "error", Message: SARIFText{Text: fe.Err},
			Locations: []SARIFLocation{{PhysicalLocation: SARIFPhysical{ArtifactLocation: SARIFArtifact{URI: artifactURI(fe.File)}}}},
		})
	}
	run.Invocations = []SARIFInvocation{inv}
	for _, rep := range reports {
		for _, f := range rep.Findings {
			res := SARIFResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
				Message:             SARIFText{Text: f.Message + ". Remedy: " + f.Remedy},
				PartialFingerprints: map[string]string{FingerprintName: fingerprint(f)},
				BaselineState:       f.BaselineState}
			phys := SARIFPhysical{ArtifactLocation: SARIFArtifact{URI: artifactURI(f.File)}}
			if f.Line > 0 {
				phys.Region = &SARIFRegion{StartLine: f.Line, StartColumn: f.Column}
			}
			res.Locations = []SARIFLocation{{PhysicalLocation: phys}}
			props := map[string]any{"remedy": f.Remedy}
			if f.EntryID != "" {
				props["entryId"] = f.EntryID
			}
			if f.Fixable {
				props["fixable"] = true
			}
			res.Properties = props
			run.Results = append(run.Results, res)
		}
	}
	return &SARIFLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []SARIFRun{run}}
}

// ruleName turns "orphan-tool-call" into "OrphanToolCall" (SARIF's
// reportingDescriptor.name is an identifier-like name).
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// fingerprint identifies a finding across runs: rule, file and the
// finding's key, hashed (secrets' keys are hashes already, but the file
// path need not appear in clear either).
func fingerprint(f Finding) string {
	sum := sha256.Sum256([]byte(f.Rule + "\x00" + walk.Key(f.File) + "\x00" + f.Key))
	return hex.EncodeToString(sum[:16])
}

// artifactURI is the file as a relative URI reference (GitHub resolves it
// against the repository root when lint runs there) or a file: URI for
// absolute paths.
func artifactURI(file string) string {
	p := walk.Key(file)
	if filepath.IsAbs(p) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}
