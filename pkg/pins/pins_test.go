package pins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddListRemove(t *testing.T) {
	state, proj := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(proj, ".git"), 0o700)
	sub := filepath.Join(proj, "a", "b")
	os.MkdirAll(sub, 0o700)
	for i, text := range []string{"never push to main", "port is 31686", "never push to main"} {
		n, err := Add(state, sub, text)
		want := []int{1, 2, 1}[i]
		if err != nil || n != want {
			t.Fatalf("Add(%q) = %d, %v; want %d", text, n, err, want)
		}
	}
	// The project is the git root: pins from a subdirectory are the root's.
	if File(state, sub) != File(state, proj) {
		t.Errorf("a subdirectory has its own pins file")
	}
	os.MkdirAll(filepath.Join(proj, ".ctxtool"), 0o700)
	os.WriteFile(filepath.Join(proj, ProjectFile), []byte("# pins\n- checked in rule\nnot a pin\n"), 0o600)
	ps, err := Load(state, proj)
	if err != nil || len(ps) != 3 || ps[0].N != 1 || ps[1].Text != "port is 31686" || ps[2].N != 0 || ps[2].Text != "checked in rule" {
		t.Fatalf("Load = %+v, %v", ps, err)
	}
	if text, err := Remove(state, proj, 1); err != nil || text != "never push to main" {
		t.Fatalf("Remove(1) = %q, %v", text, err)
	}
	if ps, _ = Load(state, proj); ps[0].Text != "port is 31686" || ps[0].N != 1 {
		t.Errorf("after rm: %+v", ps)
	}
	if _, err := Remove(state, proj, 5); err == nil || !strings.Contains(err.Error(), "pin --list") {
		t.Errorf("Remove(5) = %v", err)
	}
	if _, err := Add(state, proj, strings.Repeat("x", MaxPin+1)); err == nil {
		t.Errorf("an over-long pin was accepted")
	}
	if _, err := Add(state, proj, "  "); err == nil {
		t.Errorf("an empty pin was accepted")
	}
}
