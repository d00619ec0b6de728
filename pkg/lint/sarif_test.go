package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ctxtool/ctxtool/internal/oracle"
)

func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sarif", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateSARIF(t *testing.T, s *jsonschema.Schema, log *SARIFLog) map[string]any {
	t.Helper()
	raw, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("SARIF does not validate against the 2.1.0 schema: %v", err)
	}
	return inst.(map[string]any)
}

// lint's SARIF validates against the official 2.1.0 schema, for findings of
// every rule, file errors and baseline states, and puts each result on its
// transcript line.
func TestSARIFValidatesAgainstSchema(t *testing.T) {
	schema := sarifSchema(t)
	var reports []*Report
	var lines int
	for _, rc := range ruleCases() {
		p, _ := rc.make(t)
		opts := defaultOptions()
		if rc.opts != nil {
			rc.opts(opts)
		}
		r, err := File(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Findings {
			r.Findings[i].BaselineState = []string{"new", "unchanged"}[i%2]
		}
		lines += len(r.Findings)
		reports = append(reports, r)
	}
	fx, err := File(filepath.Join(oracle.ModuleRoot(), "testdata", "edge-truncated.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reports = append(reports, fx)
	lines += len(fx.Findings)
	log := SARIF(reports, []FileError{{File: "missing.jsonl", Err: "missing.jsonl: no such file or directory"}}, nil, "1.2.3")
	doc := validateSARIF(t, schema, log)

	run := doc["runs"].([]any)[0].(map[string]any)
	results := run["results"].([]any)
	if len(results) != lines {
		t.Fatalf("%d results for %d findings", len(results), lines)
	}
	rules := run["tool"].(map[string]any)["driver"].(map[string]any)["rules"].([]any)
	if len(rules) != len(Rules()) {
		t.Fatalf("%d rules in the driver, want %d", len(rules), len(Rules()))
	}
	// The truncated fixture's torn line is located at line 33 of its file.
	found := false
	for _, r := range results {
		res := r.(map[string]any)
		loc := res["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
		uri := loc["artifactLocation"].(map[string]any)["uri"].(string)
		if res["ruleId"] == RuleTornLine && strings.HasSuffix(uri, "edge-truncated.jsonl") {
			found = fmt.Sprint(loc["region"].(map[string]any)["startLine"]) == "33"
		}
		idx, _ := strconv.Atoi(fmt.Sprint(res["ruleIndex"]))
		if rules[idx].(map[string]any)["id"] != res["ruleId"] {
			t.Errorf("ruleIndex %d does not point at %v", idx, res["ruleId"])
		}
		if fp := res["partialFingerprints"].(map[string]any)[FingerprintName]; fp == "" || fp == nil {
			t.Errorf("result without fingerprint: %v", res)
		}
	}
	if !found {
		t.Error("no torn-line result at edge-truncated.jsonl:33")
	}
	// An empty run (no findings, no files) is valid too.
	validateSARIF(t, schema, SARIF(nil, nil, nil, ""))
}

// The schema check is not a rubber stamp: a log missing required parts
// fails it.
func TestSARIFSchemaRejectsBrokenLogs(t *testing.T) {
	schema := sarifSchema(t)
	for name, doc := range map[string]string{
		"no version":     `{"runs":[]}`,
		"bad level":      `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`,
		"no driver name": `{"version":"2.1.0","runs":[{"tool":{"driver":{}}}]}`,
		"line zero":      `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"locations":[{"physicalLocation":{"region":{"startLine":0}}}]}]}]}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(inst) == nil {
			t.Errorf("%s: the schema accepted %s", name, doc)
		}
	}
}
