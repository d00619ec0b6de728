package sessiongen

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
)

// moduleRoot is the repository root (where go.mod is).
func moduleRoot(t *testing.T) string { return oracle.ModuleRoot() }

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
}

// piReport is what pi's own loader reports for a file.
type piReport = oracle.Result

// piCheck runs pi's own loader (internal/oracle/js/pi-check.mjs) over files in
// one node process, keyed by file. Like every oracle test it skips without
// the oracle, except in CI where it fails.
func piCheck(t *testing.T, files ...string) map[string]piReport {
	t.Helper()
	res := map[string]piReport{}
	for _, r := range oracle.Check(t, true, false, files...) {
		res[r.File] = r
	}
	return res
}

// canonReport is what the canonical-JSON node script says about a file.
type canonReport struct {
	File      string `json:"file"`
	Lines     int    `json:"lines"`
	Bad       []int  `json:"bad"`       // parse but JSON.stringify(JSON.parse(l)) !== l
	Malformed []int  `json:"malformed"` // JSON.parse fails
	EndsNL    bool   `json:"endsNL"`
}

const canonScript = `
const fs = require("fs");
const out = [];
for (const f of process.argv.slice(1)) {
  const txt = fs.readFileSync(f, "utf8");
  const lines = txt.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const bad = [], malformed = [];
  lines.forEach((l, i) => {
    let v;
    try { v = JSON.parse(l); } catch { malformed.push(i + 1); return; }
    if (JSON.stringify(v) !== l) bad.push(i + 1);
  });
  out.push({ file: f, lines: lines.length, bad, malformed, endsNL: txt.endsWith("\n") });
}
process.stdout.write(JSON.stringify(out));
`

// canonCheck runs JSON.stringify(JSON.parse(line)) === line over every
// line of every file in one node process.
func canonCheck(t *testing.T, files ...string) map[string]canonReport {
	t.Helper()
	needNode(t)
	out, err := exec.Command("node", append([]string{"-e", canonScript}, files...)...).Output()
	if err != nil {
		t.Fatalf("node canonical check: %v", err)
	}
	var rs []canonReport
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatal(err)
	}
	m := map[string]canonReport{}
	for _, r := range rs {
		m[r.File] = r
	}
	return m
}
