package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A Codex 0.171 fork (codex exec fork) holds only its own turns after a
// session_meta.history_base pointing into the parent's rollout (the real
// codex's fork in internal/agentkit: 60 tokens read where Codex sent
// 3,353). Codex sends the parent's first end_byte_offset bytes before the
// fork's turns; so does the reader, citing the parent's lines.
const (
	cxParentID = "01a23584-63ab-7c11-9cfe-cbbc2e80857f"
	cxForkID   = "01a23584-6a48-70d0-b13b-98dc1779bbf3"
)

func cxParentLines() []string {
	return []string{
		`{"timestamp":"2026-12-02T06:49:58.483Z","ordinal":0,"type":"session_meta","payload":{"id":"` + cxParentID + `","timestamp":"2026-12-02T06:49:58.480Z","cwd":"/p","cli_version":"0.171.0","model_provider":"fake"}}`,
		`{"timestamp":"2026-12-02T06:49:58.500Z","ordinal":1,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"parent question zq-ledger-7"}]}}`,
		`{"timestamp":"2026-12-02T06:49:58.600Z","ordinal":2,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"parent answer"}]}}`,
		// After the fork point: not the fork's history.
		`{"timestamp":"2026-12-02T06:50:10.000Z","ordinal":3,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"later in the parent"}]}}`,
	}
}

func cxForkLines(end int) []string {
	return []string{
		`{"timestamp":"2026-12-02T06:50:00.149Z","ordinal":3,"type":"session_meta","payload":{"id":"` + cxForkID + `","forked_from_id":"` + cxParentID + `","timestamp":"2026-12-02T06:50:00.139Z","cwd":"/p","cli_version":"0.171.0","model_provider":"fake","history_mode":"paginated","history_base":{"thread_id":"` + cxParentID + `","end_ordinal_exclusive":3,"end_byte_offset":` + itoa(end) + `}}}`,
		`{"timestamp":"2026-12-02T06:50:00.185Z","ordinal":4,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"In the fork: try MySQL instead."}]}}`,
		`{"timestamp":"2026-12-02T06:50:00.226Z","ordinal":5,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"fork answer"}]}}`,
	}
}

// writeCodexHome writes the parent (plain or .zst, or not at all) and the
// fork into a Codex home's sessions tree, returning the fork's path.
func writeCodexHome(t *testing.T, parent string) (home, fork string) {
	t.Helper()
	home = t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "02")
	os.MkdirAll(day, 0o700)
	pl := cxParentLines()
	end := len(strings.Join(pl[:3], "\n")) + 1 // the first three lines
	data := []byte(strings.Join(pl, "\n") + "\n")
	name := filepath.Join(day, "rollout-2026-12-02T06-49-58-"+cxParentID+".jsonl")
	switch parent {
	case "plain":
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	case "zst":
		enc, _ := zstd.NewWriter(nil)
		// Compressed once idle, into the archived tree.
		arch := filepath.Join(home, "archived_sessions")
		os.MkdirAll(arch, 0o700)
		name = filepath.Join(arch, filepath.Base(name)+".zst")
		if err := os.WriteFile(name, enc.EncodeAll(data, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fork = filepath.Join(day, "rollout-2026-12-02T06-50-00-"+cxForkID+".jsonl")
	if err := os.WriteFile(fork, []byte(strings.Join(cxForkLines(end), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, fork
}

func contextTexts(t *testing.T, s *transcript.Session) (texts []string, lines []int) {
	t.Helper()
	for _, m := range s.Context().Messages {
		msg, err := s.Message(m.Entry)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, msg.Text())
		lines = append(lines, m.Entry.Line)
	}
	return texts, lines
}

func TestCodexForkReadsItsParentsHistory(t *testing.T) {
	for _, form := range []string{"plain", "zst"} {
		t.Run(form, func(t *testing.T) {
			_, fork := writeCodexHome(t, form)
			for _, load := range []func(string) (*transcript.Session, error){transcript.Load, transcript.LoadLazy} {
				s, err := load(fork)
				if err != nil {
					t.Fatal(err)
				}
				texts, lines := contextTexts(t, s)
				want := []string{"parent question zq-ledger-7", "parent answer", "In the fork: try MySQL instead.", "fork answer"}
				if strings.Join(texts, "|") != strings.Join(want, "|") {
					t.Errorf("context %q; want the parent's history up to the fork point, then the fork's turns %q", texts, want)
				}
				// The parent's entries cite the parent's lines 2 and 3; the
				// fork's its own 2 and 3; a note names the parent's file.
				if len(lines) == 4 && (lines[0] != 2 || lines[1] != 3 || lines[2] != 2 || lines[3] != 3) {
					t.Errorf("entry lines %v; want [2 3 2 3]", lines)
				}
				notes := strings.Join(s.Notes(), "\n")
				if !strings.Contains(notes, "lines 1–3 of") || !strings.Contains(notes, cxParentID) {
					t.Errorf("no note says where the history's lines are: %q", notes)
				}
				s.Close()
			}
		})
	}
}

func TestCodexForkWithoutItsParent(t *testing.T) {
	home, fork := writeCodexHome(t, "none")
	s, err := transcript.Load(fork)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	texts, _ := contextTexts(t, s)
	if len(texts) != 2 || texts[0] != "In the fork: try MySQL instead." {
		t.Errorf("context %q; want the fork's own two messages", texts)
	}
	notes := s.Notes()
	var n int
	for _, x := range notes {
		if strings.Contains(x, cxParentID) {
			n++
			if !strings.Contains(x, filepath.Join(home, "sessions")) || !strings.Contains(x, filepath.Join(home, "archived_sessions")) {
				t.Errorf("the note does not say where it looked: %q", x)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d notes name the missing parent %s; want one: %q", n, cxParentID, notes)
	}
}
