// Package oracle runs pi's own session loader (internal/oracle/js/pi-check.mjs,
// pinned in internal/oracle/js/package-lock.json) from Go tests, so tests can
// prove that what ctxtool reads and writes is what pi loads. Tests skip when
// node or the harness's packages are missing (install them with
// internal/oracle/js/install.sh); with CI=true they fail instead.
package oracle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/agentkit"
)

// Message is one context message with --per-message.
type Message struct {
	EntryID string `json:"entryId"`
	Line    int    `json:"line"`
	Role    string `json:"role"`
	Tokens  int    `json:"tokens"`
}

// Compaction is the compaction in force as pi sees it.
type Compaction struct {
	ID               string          `json:"id"`
	Line             int             `json:"line"`
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          json.RawMessage `json:"details"`
}

// Result is what pi reports for one file.
type Result struct {
	File              string         `json:"file"`
	Bytes             int            `json:"bytes"`
	Loads             bool           `json:"loads"`
	Error             string         `json:"error"`
	Lines             int            `json:"lines"`
	MalformedLines    []int          `json:"malformedLines"`
	Version           int            `json:"version"`
	Entries           int            `json:"entries"`
	BrokenParents     int            `json:"brokenParents"`
	LeafID            string         `json:"leafId"`
	LeafType          string         `json:"leafType"`
	PathEntries       int            `json:"pathEntries"`
	ContextMessages   int            `json:"contextMessages"`
	HeuristicTokens   int            `json:"heuristicTokens"`
	UsageTokens       int            `json:"usageTokens"`
	FirstRole         string         `json:"firstRole"`
	LastRole          string         `json:"lastRole"`
	Roles             map[string]int `json:"roles"`
	OrphanToolResults int            `json:"orphanToolResults"`
	OrphanToolCalls   int            `json:"orphanToolCalls"`
	Model             *struct {
		Provider string `json:"provider"`
		ModelID  string `json:"modelId"`
	} `json:"model"`
	ThinkingLevel     string      `json:"thinkingLevel"`
	CompactionsInFile int         `json:"compactionsInFile"`
	CompactionsOnPath int         `json:"compactionsOnPath"`
	LastCompaction    *Compaction `json:"lastCompaction"`
	ContextText       string      `json:"contextText"`
	Messages          []Message   `json:"messages"`
}

// Dir is the harness directory: $PI_ORACLE, else internal/oracle/js in the
// module.
func Dir() string {
	if d := os.Getenv("PI_ORACLE"); d != "" {
		return d
	}
	return filepath.Join(ModuleRoot(), "internal", "oracle", "js")
}

// ModuleRoot walks up from the working directory to go.mod.
func ModuleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Fixtures returns the real pi sessions vendored in testdata/external (MIT,
// from pi's repository; provenance in testdata/external/SOURCES.md).
func Fixtures(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ModuleRoot(), "testdata", "external", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("testdata/external has no fixtures")
	}
	return files
}

// Fixture is one vendored real pi session by file name, e.g.
// "pi-v1-before-compaction.jsonl".
func Fixture(name string) string {
	return filepath.Join(ModuleRoot(), "testdata", "external", name)
}

// WildDir is ../shared/fixtures/wild (real transcripts of every format that
// must not be copied into the repository); tests that use it skip when it is
// absent, and fail in CI.
func WildDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(ModuleRoot(), "..", "shared", "fixtures", "wild")
	if _, err := os.Stat(d); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: CI expects ../shared beside the repository", d)
		}
		t.Skipf("%s not found (real transcripts from ../shared; clone the shared folder beside the repository to run this)", d)
	}
	return d
}

// WildAgentTranscripts are the real Claude Code and Codex transcripts of
// WildDir (claude-code/*.jsonl, codex/*.jsonl), the ones the converters of
// pkg/formats read; as WildDir, it skips when the folder is absent and
// fails in CI. A folder with none fails: a moved corpus must not leave a
// test checking nothing.
func WildAgentTranscripts(t testing.TB) []string {
	t.Helper()
	wild := WildDir(t)
	var files []string
	for _, sub := range []string{"claude-code", "codex"} {
		more, _ := filepath.Glob(filepath.Join(wild, sub, "*.jsonl"))
		if len(more) == 0 {
			t.Fatalf("no %s transcripts in %s", sub, wild)
		}
		files = append(files, more...)
	}
	return files
}

// Available reports whether the oracle can run here.
func Available() bool {
	if _, err := exec.LookPath("node"); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(Dir(), "node_modules", "@mariozechner", "pi-coding-agent"))
	return err == nil
}

// Require skips the test when the oracle cannot run. In CI (CI=true) a
// missing oracle fails instead, so conformance tests never silently vanish.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("pi oracle not installed: run %s", filepath.Join(Dir(), "install.sh"))
	}
	t.Skipf("pi oracle not installed: run %s (needs node >= 20 and npm)", filepath.Join(Dir(), "install.sh"))
}

// Check runs pi's loader on files (with --no-text unless withText) and
// returns one result per file.
func Check(t testing.TB, perMessage, withText bool, files ...string) []Result {
	t.Helper()
	Require(t)
	return run(t, "node", nil, perMessage, withText, files...)
}

// Check16 is Check with pi 1.6.0's loader (@earendil-works/pi-coding-agent,
// the pi people run now) under Node 24, both installed by
// internal/agentkit/install-pi.sh: its context rebuild projects system
// messages, compactions' systemMessage and context_edit entries, which
// 0.73.1 does not know. It skips when pi 1.6.0 is not installed (with
// CI=true it installs it).
func Check16(t testing.TB, perMessage, withText bool, files ...string) []Result {
	t.Helper()
	in, err := agentkit.FindPi(os.Getenv("CI") == "true")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	core := filepath.Join(filepath.Dir(in.CLI), "core")
	return run(t, in.Node, []string{"PI_CHECK_CORE=" + core}, perMessage, withText, files...)
}

func run(t testing.TB, node string, env []string, perMessage, withText bool, files ...string) []Result {
	t.Helper()
	args := []string{filepath.Join(Dir(), "pi-check.mjs")}
	if !withText {
		args = append(args, "--no-text")
	}
	if perMessage {
		args = append(args, "--per-message")
	}
	args = append(args, files...)
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pi-check: %v\n%s", err, stderr.String())
	}
	var res []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("pi-check output: %v", err)
		}
		res = append(res, r)
	}
	if len(res) != len(files) {
		t.Fatalf("pi-check returned %d results for %d files", len(res), len(files))
	}
	return res
}

// CheckOne is Check for a single file.
func CheckOne(t testing.TB, file string) Result {
	t.Helper()
	return Check(t, false, false, file)[0]
}
