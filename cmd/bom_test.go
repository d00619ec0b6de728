package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// One reading of a BOM (issue 38): pi trims the file, so a BOM before the
// header is not part of line 1. index does not call line 1 malformed, and
// checkpoint keys the session by its header id, as estimate, compact and
// roll do.
func TestBOMSessionHasOneIdentity(t *testing.T) {
	cleanEnv(t)
	var buf bytes.Buffer
	b := sessiongen.NewBuilder(&buf, sessiongen.Config{})
	b.UserText("where is the retry config?")
	b.AssistantText("in pkg/llm/retry.go, with a backoff of 250 ms")
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for name, pre := range map[string]string{"bom": "\uFEFF", "bom-line": "\uFEFF\n"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chosen-name.jsonl")
			testkit.WriteFile(t, path, append([]byte(pre), buf.Bytes()...), 0o644)
			var want struct{ ID string }
			first, _, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
			if err := json.Unmarshal(first, &want); err != nil || want.ID == "" {
				t.Fatalf("header %s: %v", first, err)
			}
			if h, err := transcript.ReadHeader(path); err != nil || h.ID != want.ID {
				t.Errorf("ReadHeader: id %q %v, want %s", h.ID, err, want.ID)
			}
			state := t.TempDir()
			out, errOut := runOK(t, "index", "--state-dir", state, path)
			if strings.Contains(out+errOut, "malformed") {
				t.Errorf("index calls the BOM line malformed:\n%s%s", out, errOut)
			}
			if out, _ := runOK(t, "search", "--state-dir", state, "--min-score", "0", "retry"); !strings.Contains(out, "retry.go") {
				t.Errorf("search: %s", out)
			}
			runOK(t, "checkpoint", path, "--state-dir", state)
			dirs, _ := os.ReadDir(filepath.Join(state, "context", "checkpoints"))
			if len(dirs) != 1 || dirs[0].Name() != want.ID {
				var names []string
				for _, d := range dirs {
					names = append(names, d.Name())
				}
				t.Errorf("checkpoint keyed the session as %v, want its header id %s", names, want.ID)
			}
			est, _ := runOK(t, "estimate", path)
			if strings.Contains(est, "malformed") {
				t.Errorf("estimate: %s", est)
			}
		})
	}
}
