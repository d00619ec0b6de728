package sessiongen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// moduleRoot walks up from the package directory to go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
}

// piReport is the part of pi-check.mjs output the tests compare.
type piReport struct {
	File              string         `json:"file"`
	Bytes             int64          `json:"bytes"`
	Loads             bool           `json:"loads"`
	Error             string         `json:"error"`
	Lines             int            `json:"lines"`
	MalformedLines    []int          `json:"malformedLines"`
	Version           int            `json:"version"`
	Entries           int            `json:"entries"`
	BrokenParents     int            `json:"brokenParents"`
	LeafID            string         `json:"leafId"`
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
	ThinkingLevel     string `json:"thinkingLevel"`
	CompactionsInFile int    `json:"compactionsInFile"`
	LastCompaction    *struct {
		ID string `json:"id"`
	} `json:"lastCompaction"`
	Messages []struct {
		EntryID string `json:"entryId"`
		Line    int    `json:"line"`
		Role    string `json:"role"`
		Tokens  int    `json:"tokens"`
	} `json:"messages"`
}

// piCheck runs pi's own loader (shared/oracle/pi-check.mjs) over files in
// one node process. It skips when node or the oracle install is missing.
func piCheck(t *testing.T, files ...string) map[string]piReport {
	t.Helper()
	needNode(t)
	dir := os.Getenv("PI_ORACLE")
	if dir == "" {
		dir = filepath.Join(moduleRoot(t), "..", "shared", "oracle")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skip("run " + filepath.Join(dir, "install.sh") + " to enable pi checks")
	}
	args := append([]string{filepath.Join(dir, "pi-check.mjs"), "--no-text", "--per-message"}, files...)
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		t.Fatalf("pi-check: %v", err)
	}
	res := map[string]piReport{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var r piReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("pi-check output: %v", err)
		}
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
