package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeFields are the JSON field names of the README's table (between
// its json-fields markers).
func readmeFields(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- json-fields:begin -->"), strings.Index(s, "<!-- json-fields:end -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no json-fields table")
	}
	fields := map[string]bool{}
	name := regexp.MustCompile("`([a-zA-Z]+)`")
	for _, line := range strings.Split(s[i:j], "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cols[1], -1) {
			fields[m[1]] = true
		}
	}
	return fields
}

// Every command's --json keys are in the README's one table of field
// names, a failure is "error" in every command, and `tokens` is never the
// checkpoint's resume text.
func TestJSONFieldsFollowREADME(t *testing.T) {
	fields := readmeFields(t)
	h := discoveryHome(t)
	var pi, claude string
	for _, s := range h.Sessions {
		switch {
		case s.Agent == "pi" && pi == "":
			pi = s.Path
		case s.Agent == "claude-code" && claude == "":
			claude = s.Path
		}
	}
	copyPi := filepath.Join(t.TempDir(), "s.jsonl")
	b, _ := os.ReadFile(pi)
	os.WriteFile(copyPi, b, 0o644)
	missing := filepath.Join(t.TempDir(), "gone.jsonl")
	runs := [][]string{
		{"estimate", "--per-message", pi},
		{"estimate", pi, missing},
		{"sessions"},
		{"lint", "--fail-on", "never", "--max-tokens", "100", pi, claude},
		{"lint", "--list-rules"},
		{"compact", "--dry-run", "--summarizer", "extractive", pi},
		{"compact", "--summarizer", "extractive", claude},
		{"compact", "--summarizer", "extractive", missing},
		{"roll", "--dry-run", "--trigger", "0", pi},
		{"checkpoint", "--trigger", "manual", pi},
		{"checkpoint", "--capture", pi},
		{"restore", pi},
		{"index", pi},
		{"search", "budget"},
		{"prune"},
		{"budget", pi},
		{"flush", "--workspace", t.TempDir(), "--dry-run", pi},
		{"export", claude, "-o", filepath.Join(t.TempDir(), "x.jsonl")},
	}
	failures := 0
	for _, args := range runs {
		out, errOut, _ := runCLI(t, append([]string{"--json"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if strings.TrimSpace(out) == "" {
			t.Errorf("%v --json printed nothing\n%s", args, errOut)
			continue
		}
		for _, line := range lines {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Errorf("%v --json: not an object per line: %v: %.120s", args, err, line)
				continue
			}
			var unknown []string
			for k := range obj {
				if !fields[k] {
					unknown = append(unknown, k)
				}
			}
			if len(unknown) > 0 {
				slices.Sort(unknown)
				t.Errorf("%v --json: fields %v are not in README.md's JSON fields table", args, unknown)
			}
			if _, ok := obj["error"]; ok {
				failures++
			}
			if args[0] == "checkpoint" || args[0] == "restore" {
				if _, ok := obj["tokens"]; ok {
					t.Errorf("%v: `tokens` is the context size, not the resume text: %s", args, line)
				}
			}
		}
	}
	// The missing file of estimate, the foreign file and the missing file
	// of compact: each failure is named "error".
	if failures < 3 {
		t.Errorf("%d failures reported as \"error\", want at least 3", failures)
	}
}

// A read-only session's lint remedies name only what works on it: no
// --fix, no compact or roll, which would refuse the file.
func TestLintRemediesForReadOnlyFormats(t *testing.T) {
	h := discoveryHome(t)
	for _, s := range h.Sessions {
		if s.Agent != "claude-code" && s.Agent != "codex" {
			continue
		}
		out, _, _ := runCLI(t, "--json", "lint", "--fail-on", "never", "--max-tokens", "100", s.Path)
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var f struct {
				Rule, Remedy string
				Fixable      bool
			}
			if json.Unmarshal([]byte(line), &f) != nil {
				continue
			}
			n++
			if f.Fixable || strings.Contains(f.Remedy, "--fix") || strings.Contains(f.Remedy, "`ctxtool compact`") || strings.Contains(f.Remedy, "`ctxtool roll`") {
				t.Errorf("%s: %s suggests what the format refuses: fixable %v, %q", s.Path, f.Rule, f.Fixable, f.Remedy)
			}
		}
		if n == 0 {
			t.Errorf("%s: no finding over --max-tokens 100", s.Path)
		}
	}
}
