package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
)

type genFile struct {
	name  string
	path  string
	truth *sessiongen.AgentResult
}

// genAgentFiles writes one generated transcript per format: Claude Code
// (with and without compactions), Codex (with a compacted replacement
// history), Codex's 2025 shape, and zstd-compressed Claude Code.
func genAgentFiles(t *testing.T, fact string) []genFile {
	t.Helper()
	dir := t.TempDir()
	var out []genFile
	write := func(name string, gen func(*bytes.Buffer) (*sessiongen.AgentResult, error), zst bool) {
		var buf bytes.Buffer
		res, err := gen(&buf)
		if err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		if zst {
			enc, _ := zstd.NewWriter(nil)
			data = enc.EncodeAll(data, nil)
		}
		p := filepath.Join(dir, name)
		testkit.WriteFile(t, p, data, 0o644)
		out = append(out, genFile{name, p, res})
	}
	cc := func(o sessiongen.AgentOptions) func(*bytes.Buffer) (*sessiongen.AgentResult, error) {
		return func(b *bytes.Buffer) (*sessiongen.AgentResult, error) { return sessiongen.GenerateClaudeCode(b, o) }
	}
	cx := func(o sessiongen.AgentOptions) func(*bytes.Buffer) (*sessiongen.AgentResult, error) {
		return func(b *bytes.Buffer) (*sessiongen.AgentResult, error) { return sessiongen.GenerateCodex(b, o) }
	}
	write("cc.jsonl", cc(sessiongen.AgentOptions{Seed: 1, Turns: 10, Thinking: true, Fact: fact}), false)
	write("cc-compacted.jsonl", cc(sessiongen.AgentOptions{Seed: 2, Turns: 14, Compactions: 2, Fact: fact}), false)
	write("rollout.jsonl", cx(sessiongen.AgentOptions{Seed: 3, Turns: 10, Fact: fact}), false)
	write("rollout-compacted.jsonl", cx(sessiongen.AgentOptions{Seed: 4, Turns: 14, Compactions: 2, Thinking: true, Fact: fact}), false)
	write("rollout-2025.jsonl", cx(sessiongen.AgentOptions{Seed: 5, Turns: 8, Legacy: true, Fact: fact}), false)
	write("cc.jsonl.zst", cc(sessiongen.AgentOptions{Seed: 6, Turns: 8, Fact: fact}), true)
	return out
}

// Done-when: for each format, estimate --tokenizer heuristic equals the
// chars/4 estimate of the context the agent would send (the generator
// derives it from the format's rules while writing), and --tokenizer usage
// equals the usage record the file carries for its last reply.
func TestEstimateGeneratedAgentFormats(t *testing.T) {
	cleanEnv(t)
	for _, f := range genAgentFiles(t, "") {
		reps, _, err := runEstimateJSON(t, &EstimateOptions{Files: []string{f.path}, Size: estimate.Options{Method: "heuristic"}})
		if err != nil || len(reps) != 1 {
			t.Fatalf("%s: %v", f.name, err)
		}
		r := reps[0]
		if r.Tokens != f.truth.ContextTokens {
			t.Errorf("%s: heuristic %d, want %d (chars/4 of the %d messages the agent sends)", f.name, r.Tokens, f.truth.ContextTokens, f.truth.ContextMessages)
		}
		if len(r.MalformedLines) != 0 {
			t.Errorf("%s: malformed %v", f.name, r.MalformedLines)
		}
		if f.truth.UsageTokens == 0 {
			continue // Codex's 2025 shape carries no usage
		}
		reps, _, err = runEstimateJSON(t, &EstimateOptions{Files: []string{f.path}, Size: estimate.Options{Method: "usage"}})
		if err != nil {
			t.Fatal(err)
		}
		if u := reps[0]; u.Tokens != f.truth.UsageTokens || u.UsageTokens != f.truth.UsageTokens {
			t.Errorf("%s: usage estimate %d (anchor %d), want the last reply's record %d", f.name, u.Tokens, u.UsageTokens, f.truth.UsageTokens)
		}
		if f.truth.Window > 0 && reps[0].ContextWindow != f.truth.Window {
			t.Errorf("%s: window %d, want the file's model_context_window %d", f.name, reps[0].ContextWindow, f.truth.Window)
		}
	}
}

// Done-when: search finds a planted phrase in each generated format, and
// cites the line it was planted on.
func TestSearchFindsPlantedPhraseInEveryFormat(t *testing.T) {
	cleanEnv(t)
	const fact = "zanzibar-quokka-7731 deployment"
	files := genAgentFiles(t, fact)
	state := t.TempDir()
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	runOK(t, append([]string{"--state-dir", state, "index"}, paths...)...)
	out, _ := runOK(t, "--state-dir", state, "--json", "search", "--max-results", "20", "zanzibar-quokka-7731")
	type hit struct {
		Path      string `json:"path"`
		StartLine int    `json:"startLine"`
		EndLine   int    `json:"endLine"`
	}
	hits := jsonLines[hit](t, out)
	for _, f := range files {
		found := false
		for _, h := range hits {
			if h.Path == f.path && h.StartLine <= f.truth.FactLine && f.truth.FactLine <= h.EndLine {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no hit covering line %d in %+v", f.name, f.truth.FactLine, hits)
		}
	}
}

// export --to pi writes a session pi's own loader reads, with the context
// (messages, heuristic tokens, usage estimate) ctxtool reads from the
// original; the original is untouched; an existing output is refused.
func TestExportToPiLoadsInPi(t *testing.T) {
	cleanEnv(t)
	oracle.Require(t)
	files := genAgentFiles(t, "")
	wild := copyWild(t, "claude-code/spotter-4d5611e5-compact.jsonl", "codex/quelklef-shellws-rollout-compacted.jsonl")
	for _, w := range wild {
		files = append(files, genFile{name: filepath.Base(w), path: w})
	}
	for _, f := range files {
		before, _ := os.ReadFile(f.path)
		out := filepath.Join(t.TempDir(), "copy.jsonl")
		runOK(t, "export", f.path, "--to", "pi", "-o", out)
		reps, _, err := runEstimateJSON(t, &EstimateOptions{Files: []string{f.path}, Size: estimate.Options{Method: "heuristic"}})
		if err != nil {
			t.Fatal(err)
		}
		ureps, _, _ := runEstimateJSON(t, &EstimateOptions{Files: []string{f.path}, Size: estimate.Options{Method: "usage"}})
		pi := oracle.CheckOne(t, out)
		if !pi.Loads || pi.HeuristicTokens != reps[0].Tokens || pi.ContextMessages != reps[0].ContextMessages {
			t.Errorf("%s: pi loads=%v %q, %d messages / %d tokens; ctxtool on the original: %d / %d",
				f.name, pi.Loads, pi.Error, pi.ContextMessages, pi.HeuristicTokens, reps[0].ContextMessages, reps[0].Tokens)
		}
		switch rej := ureps[0].UsageRejected; {
		case rej == nil && pi.UsageTokens != ureps[0].Tokens:
			t.Errorf("%s: pi's usage estimate %d, ctxtool's %d", f.name, pi.UsageTokens, ureps[0].Tokens)
		case rej != nil && (rej.Reason == "" || pi.UsageTokens >= ureps[0].Tokens):
			// pi anchors on a record ctxtool does not trust (issue 9: a
			// zero-usage reply), which makes pi's figure the smaller one.
			t.Errorf("%s: ctxtool rejected pi's anchor (%+v) but pi says %d, ctxtool %d", f.name, rej, pi.UsageTokens, ureps[0].Tokens)
		}
		if f.truth != nil && pi.HeuristicTokens != f.truth.ContextTokens {
			t.Errorf("%s: pi heuristic %d, generator truth %d", f.name, pi.HeuristicTokens, f.truth.ContextTokens)
		}
		after, _ := os.ReadFile(f.path)
		if !bytes.Equal(before, after) {
			t.Errorf("%s: export changed the original", f.name)
		}
		if _, stderr, code := runCLI(t, "export", f.path, "--to", "pi", "-o", out); code != 1 || !strings.Contains(stderr, "--force") {
			t.Errorf("%s: export over an existing file: exit %d %q", f.name, code, stderr)
		}
	}
}
