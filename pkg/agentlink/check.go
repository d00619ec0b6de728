package agentlink

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed shims/check.mjs
var checkDriver []byte

// CheckLine is one finding of CheckPi.
type CheckLine struct {
	What string `json:"what"`
	// Status is "ok", "fail" or "skip".
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// checkWord is planted in the check's tiny session; a summary that comes
// back with it went through ctxtool's summariser.
const checkWord = "/srv/ctxtool-check/planted.txt"

// checkEvent is the tiny session_before_compact event of a check: two
// exchanges summarised, the last one kept.
func checkEvent() map[string]any {
	user := func(t string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": t}}, "timestamp": 1}
	}
	asst := func(t string) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": t}},
			"provider": "check", "model": "check", "stopReason": "stop", "timestamp": 2}
	}
	return map[string]any{
		"type": "session_before_compact", "reason": "manual",
		"preparation": map[string]any{
			"firstKeptEntryId":    "kept0001",
			"messagesToSummarize": []any{user("Keep the config in " + checkWord + " and never edit it by hand."), asst("Understood: " + checkWord + " stays as is.")},
			"turnPrefixMessages":  []any{},
			"isSplitTurn":         false, "tokensBefore": 64,
			"fileOps":  map[string]any{},
			"settings": map[string]any{"enabled": true, "reserveTokens": 16384, "keepRecentTokens": 20000},
		},
		"branchEntries": []any{map[string]any{"type": "message", "id": "kept0001", "message": user("What next?")}},
	}
}

// CheckPi checks an installed pi extension end to end, changing nothing:
// that it is ctxtool's and current for binary, that the binary it runs
// answers a tiny request, and — with node (its path; "" skips) — that the
// extension itself, loaded as pi loads it, returns ctxtool's compaction.
// ok is false when something that should work does not.
func CheckPi(ctx context.Context, agentDir, binary, node string) (lines []CheckLine, ok bool) {
	ok = true
	add := func(what, status, format string, args ...any) {
		lines = append(lines, CheckLine{What: what, Status: status, Detail: fmt.Sprintf(format, args...)})
		if status == "fail" {
			ok = false
		}
	}
	path := PiExtensionPath(agentDir)
	have, err := os.ReadFile(path)
	if err != nil {
		add("extension", "fail", "%v: run ctxtool install pi", err)
		return lines, false
	}
	runs := InstalledBinary(have)
	want, _ := PiExtension(binary)
	switch {
	case runs == "":
		add("extension", "fail", "%s is not ctxtool's extension", path)
		return lines, false
	case bytes.Equal(have, want):
		add("extension", "ok", "%s, current, runs %s", path, runs)
	default:
		add("extension", "fail", "%s runs %s but is not what this ctxtool (%s) writes: run ctxtool install pi", path, runs, binary)
	}

	ev := checkEvent()
	req := map[string]any{"version": Version, "agent": "pi", "reason": "manual", "session": map[string]any{"id": "ctxtool-check"},
		"preparation": ev["preparation"]}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, detail := checkBinary(cctx, runs, req)
	add("binary", st, "%s", detail)

	if node == "" {
		add("shim", "skip", "node not found: the extension was not run (pi runs it; install node to check it here)")
		return lines, ok
	}
	var got struct {
		Error  string `json:"error"`
		Result *struct {
			Compaction *struct {
				Summary          string `json:"summary"`
				FirstKeptEntryID string `json:"firstKeptEntryId"`
			} `json:"compaction"`
		} `json:"result"`
	}
	evJSON, _ := json.Marshal(ev)
	stderr, err := runNodeCheck(cctx, node, checkDriver, map[string][]byte{"ctxtool.mjs": have},
		func(dir string) []string { return []string{filepath.Join(dir, "ctxtool.mjs"), string(evJSON)} }, "extension", &got)
	switch {
	case err != nil:
		add("shim", "fail", "%v", err)
	case got.Error != "":
		add("shim", "fail", "%s", got.Error)
	case got.Result == nil || got.Result.Compaction == nil:
		add("shim", "fail", "the extension returned no compaction (pi would compact by itself): %s", stderr)
	case !strings.Contains(got.Result.Compaction.Summary, checkWord) || got.Result.Compaction.FirstKeptEntryID != "kept0001":
		add("shim", "fail", "the extension returned a compaction without ctxtool's summary or pi's cut")
	default:
		add("shim", "ok", "session_before_compact, run by %s, returned ctxtool's compaction", node)
	}
	return lines, ok
}

// runNodeCheck runs a shim's check driver under node, as the agent would
// load the shim: the driver and files are written to a temporary
// directory, node runs the driver with the arguments args gives for that
// directory, and the last line the driver prints is decoded into out. It
// returns node's standard error, which callers quote when the shim
// answered but wrongly, and an error worded as the shim's "fail" detail
// (shim names it: "extension", "plugin").
func runNodeCheck(ctx context.Context, node string, driver []byte, files map[string][]byte, args func(dir string) []string, shim string, out any) (string, error) {
	dir, err := os.MkdirTemp("", "ctxtool-check-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "check.mjs")
	if err := os.WriteFile(path, driver, 0o644); err != nil {
		return "", err
	}
	nc := exec.CommandContext(ctx, node, append([]string{path}, args(dir)...)...)
	var nerr bytes.Buffer
	nc.Stderr = &nerr
	nout, err := nc.Output()
	stderr := strings.TrimSpace(nerr.String())
	switch {
	case err != nil:
		return stderr, fmt.Errorf("node %s: %w: %s", path, err, stderr)
	case json.Unmarshal(bytes.TrimSpace(lastLine(nout)), out) != nil:
		return stderr, fmt.Errorf("the %s's check printed %.80q", shim, nout)
	}
	return stderr, nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// checkBinary sends req to `runs agent compact` and says whether the
// answer is a contract answer carrying the planted path.
func checkBinary(ctx context.Context, runs string, req map[string]any) (status, detail string) {
	payload, _ := json.Marshal(req)
	cmd := exec.CommandContext(ctx, runs, "agent", "compact")
	cmd.Stdin = bytes.NewReader(payload)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res Response
	switch {
	case err != nil:
		return "fail", fmt.Sprintf("%s agent compact: %v: %s", runs, err, strings.TrimSpace(stderr.String()))
	case json.Unmarshal(out, &res) != nil || res.Version != Version:
		return "fail", fmt.Sprintf("%s agent compact answered something other than a contract v%d answer: %.80q", runs, Version, out)
	case res.Decline != "":
		return "ok", fmt.Sprintf("%s answers contract v%d: %s", runs, Version, res.Decline)
	case !strings.Contains(res.Summary, checkWord):
		return "fail", fmt.Sprintf("%s agent compact answered a summary without the planted path %s", runs, checkWord)
	}
	return "ok", fmt.Sprintf("%s answers contract v%d for %s (%s summarizer, %d-char summary)", runs, Version, req["agent"], res.Details.Ctxtool.Summarizer, len(res.Summary))
}
