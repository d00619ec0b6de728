package sessiongen

import (
	"io"
	"path/filepath"
	"testing"
)

// Write generates a session at path (created or truncated) for a test and
// returns what was written; a generator that fails fails the test, naming
// the file, so no test goes on with a session it does not have.
func Write(t testing.TB, path string, o Options) *Result {
	t.Helper()
	return ToTestFile(t, path, func(w io.Writer) (*Result, error) { return Generate(w, o) })
}

// ToTestFile is ToFile for a test: a generator that fails fails the test,
// naming the file. The other kits' Write helpers go through it.
func ToTestFile[R any](t testing.TB, path string, generate func(w io.Writer) (R, error)) R {
	t.Helper()
	res, err := ToFile(path, generate)
	if err != nil {
		t.Fatalf("generating session %s: %v", path, err)
	}
	return res
}

// AgentCorpus writes, for seeds 1 to 3, a Claude Code, a Codex and a legacy
// Codex transcript generated with opts(seed) (Legacy set for the third) into
// dir as cc<seed>.jsonl, cx<seed>.jsonl and cxl<seed>.jsonl, then the
// hand-written odd ones (see oddAgentTranscripts), and returns their paths:
// the files that the converters' line-by-line tests read.
func AgentCorpus(t testing.TB, dir string, opts func(seed uint64) AgentOptions) []string {
	t.Helper()
	var files []string
	gen := func(name string, generate func(io.Writer, AgentOptions) (*AgentResult, error), o AgentOptions) {
		p := filepath.Join(dir, name)
		ToTestFile(t, p, func(w io.Writer) (*AgentResult, error) { return generate(w, o) })
		files = append(files, p)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		o := opts(seed)
		n := string(rune('0' + seed))
		gen("cc"+n+".jsonl", GenerateClaudeCode, o)
		gen("cx"+n+".jsonl", GenerateCodex, o)
		o.Legacy = true
		gen("cxl"+n+".jsonl", GenerateCodex, o)
	}
	return append(files, oddAgentTranscripts(t, dir)...)
}
