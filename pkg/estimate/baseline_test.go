package estimate

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseGrowth(t *testing.T) {
	for in, want := range map[string]float64{"10%": 0.1, "0.25": 0.25, "": 0, "150%": 1.5} {
		if got, err := ParseGrowth(in); err != nil || got != want {
			t.Errorf("ParseGrowth(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"10", "-5%", "lots"} {
		if _, err := ParseGrowth(bad); err == nil {
			t.Errorf("ParseGrowth(%q) accepted", bad)
		}
	}
}

func TestBaselineCheck(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	abs := filepath.Join(dir, "s.jsonl")
	os.WriteFile(base, []byte(`{"file":"a.jsonl","tokens":1000}
{"file":"`+abs+`","tokens":0}
{"file":"broken.jsonl","error":"no such file"}
`), 0o644)
	b, err := LoadBaseline(base)
	if err != nil {
		t.Fatal(err)
	}
	if g := b.Check("./a.jsonl", 1150, 0.1); !g.Known || g.BaselineTokens != 1000 || g.Share != 0.15 || !g.Over {
		t.Errorf("a.jsonl +15%%: %+v", g)
	}
	if g := b.Check("a.jsonl", 1100, 0.1); g.Over {
		t.Errorf("a.jsonl +10%% is not over 10%%: %+v", g)
	}
	if g := b.Check(abs, 5, 0.5); !g.Known || !g.Over {
		t.Errorf("from zero: %+v", g)
	}
	if g := b.Check("broken.jsonl", 5, 0.1); g.Known {
		t.Errorf("a file that failed in the baseline has no figure: %+v", g)
	}
	os.WriteFile(base, []byte("not json\n"), 0o644)
	if _, err := LoadBaseline(base); err == nil {
		t.Error("a non-estimate baseline was accepted")
	}
}
