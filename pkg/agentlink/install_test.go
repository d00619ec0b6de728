package agentlink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snapshot maps every file under dir to its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return err
	})
	return out
}

// Install writes one file, records the binary, changes nothing the second
// time, leaves the user's other files byte for byte, and uninstall removes
// only its own file; dry runs change nothing.
func TestInstallPiIdempotent(t *testing.T) {
	dir := t.TempDir()
	user := map[string]string{
		filepath.Join(dir, "settings.json"):            "{\n  \"compaction\": {\"keepRecentTokens\": 9000}\n}\n",
		filepath.Join(dir, "extensions", "mine.ts"):    "export default function (pi) {}\n",
		filepath.Join(dir, "extensions", "ctxtool.md"): "notes",
	}
	for p, b := range user {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(b), 0o600)
	}
	bin := "/opt/ctx tool/bin/ctxtool \"v2\""
	before := snapshot(t, dir)
	a, err := InstallPi(dir, bin, true)
	if err != nil || a.Change != "create" {
		t.Fatalf("dry install: %+v %v", a, err)
	}
	if after := snapshot(t, dir); len(after) != len(before) {
		t.Fatalf("a dry run wrote files: %v", after)
	}
	if a, err = InstallPi(dir, bin, false); err != nil || a.Change != "create" || a.Path != filepath.Join(dir, "extensions", "ctxtool.ts") {
		t.Fatalf("install: %+v %v", a, err)
	}
	first := snapshot(t, dir)
	ext := []byte(first[a.Path])
	if got := InstalledBinary(ext); got != bin {
		t.Errorf("the extension runs %q, want %q", got, bin)
	}
	if bytes.Contains(ext, []byte(binaryMarker)) {
		t.Error("the binary marker is still in the extension")
	}
	if a, err = InstallPi(dir, bin, false); err != nil || a.Change != "unchanged" {
		t.Fatalf("second install: %+v %v", a, err)
	}
	second := snapshot(t, dir)
	if len(second) != len(first) {
		t.Fatalf("second install changed the file set")
	}
	for p, b := range first {
		if second[p] != b {
			t.Errorf("second install changed %s", p)
		}
	}
	for p, b := range user {
		if second[p] != b {
			t.Errorf("install changed the user's %s", p)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "extensions")); len(entries) != 3 {
		t.Errorf("extensions/ holds %d files, want the user's two and ctxtool.ts (a temp file left?)", len(entries))
	}
	// a new binary updates the file
	if a, err = InstallPi(dir, "/usr/local/bin/ctxtool", false); err != nil || a.Change != "update" {
		t.Fatalf("install with another binary: %+v %v", a, err)
	}
	if a, err = UninstallPi(dir, true); err != nil || a.Change != "remove" {
		t.Fatalf("dry uninstall: %+v %v", a, err)
	}
	if _, err := os.Stat(a.Path); err != nil {
		t.Fatal("a dry uninstall removed the file")
	}
	if a, err = UninstallPi(dir, false); err != nil || a.Change != "remove" {
		t.Fatalf("uninstall: %+v %v", a, err)
	}
	if a, err = UninstallPi(dir, false); err != nil || a.Change != "unchanged" {
		t.Fatalf("second uninstall: %+v %v", a, err)
	}
	final := snapshot(t, dir)
	if len(final) != len(user) {
		t.Errorf("after uninstall: %v", final)
	}
	for p, b := range user {
		if final[p] != b {
			t.Errorf("uninstall changed the user's %s", p)
		}
	}
}

// A ctxtool.ts ctxtool did not write is neither replaced nor removed.
func TestInstallPiRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	p := PiExtensionPath(dir)
	os.MkdirAll(filepath.Dir(p), 0o755)
	mine := "// my own ctxtool glue\nexport default function (pi) {}\n"
	os.WriteFile(p, []byte(mine), 0o644)
	if _, err := InstallPi(dir, "/usr/bin/ctxtool", false); err == nil || !strings.Contains(err.Error(), "not written by ctxtool") {
		t.Errorf("install over a foreign file: %v", err)
	}
	if _, err := UninstallPi(dir, false); err == nil {
		t.Error("uninstall removed a foreign file")
	}
	if b, _ := os.ReadFile(p); string(b) != mine {
		t.Errorf("the foreign file changed: %q", b)
	}
	if _, err := InstallPi(dir, "relative/ctxtool", false); err == nil {
		t.Error("a relative binary path was accepted")
	}
}

func TestPiAgentDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_CODING_AGENT_DIR", "")
	if d, _ := PiAgentDir(); d != filepath.Join(home, ".pi", "agent") {
		t.Errorf("default agent dir %s", d)
	}
	t.Setenv("PI_CODING_AGENT_DIR", "~/pi-test")
	if d, _ := PiAgentDir(); d != filepath.Join(home, "pi-test") {
		t.Errorf("PI_CODING_AGENT_DIR=~/pi-test gave %s", d)
	}
	t.Setenv("PI_CODING_AGENT_DIR", "/srv/pi")
	if d, _ := PiAgentDir(); d != "/srv/pi" {
		t.Errorf("PI_CODING_AGENT_DIR=/srv/pi gave %s", d)
	}
}

// The extension's failure handling, run under node with a stand-in
// binary: exit 1, garbage, a hang past the timeout and an answer of another
// contract version all make the handler return nothing (pi compacts by
// itself) with one "[ctxtool]" line; a good answer becomes the compaction.
func TestPiShimUnderNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true needs node to run the pi extension")
		}
		t.Skip("node not found: the pi extension is checked under node when it is installed")
	}
	answer := `{"version":1,"summary":"planted /srv/ctxtool-check/planted.txt","firstKeptEntryId":"ignored","tokensBefore":64,"details":{"readFiles":[],"modifiedFiles":[]}}`
	cases := []struct {
		name, script string
		ok           bool
		log          string
	}{
		{"good", "cat >/dev/null; echo '" + answer + "'", true, ""},
		{"exit 1", "cat >/dev/null; echo 'config broken' >&2; exit 1", false, "exited with 1: config broken"},
		{"garbage", "cat >/dev/null; echo 'Segmentation fault'", false, "not JSON"},
		{"hang", "exec sleep 4", false, "did not answer within 1500 ms"},
		// a hang whose own child holds the pipe open: the whole group goes
		{"hang with a child", "sleep 5 & echo $! > \"$0.child\"; wait", false, "did not answer within 1500 ms"},
		{"other version", "cat >/dev/null; echo '{\"version\":9,\"summary\":\"x\"}'", false, "contract version 9"},
		{"decline", "cat >/dev/null; echo '{\"version\":1,\"decline\":\"nothing to do\"}'", false, "declined"},
		{"missing binary", "", false, "cannot run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "fake-ctxtool")
			if c.script != "" {
				os.WriteFile(bin, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755)
			}
			if _, err := InstallPi(dir, bin, false); err != nil {
				t.Fatal(err)
			}
			t.Setenv("CTXTOOL_PI_TIMEOUT_MS", "1500")
			lines, ok := CheckPi(context.Background(), dir, bin, node)
			var shim CheckLine
			for _, l := range lines {
				if l.What == "shim" {
					shim = l
				}
			}
			if (shim.Status == "ok") != c.ok {
				t.Fatalf("shim %+v (all: %+v, ok %v), want ok=%v", shim, lines, ok, c.ok)
			}
			if !c.ok && !strings.Contains(shim.Detail, "[ctxtool]") && !strings.Contains(shim.Detail, c.log) {
				t.Errorf("shim detail %q does not carry the log line (%q)", shim.Detail, c.log)
			}
			if !c.ok && (!strings.Contains(shim.Detail, c.log) || strings.Count(shim.Detail, "[ctxtool]") != 1) {
				t.Errorf("want exactly one [ctxtool] line saying %q, got %q", c.log, shim.Detail)
			}
			b, err := os.ReadFile(bin + ".child")
			if err == nil {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				time.Sleep(200 * time.Millisecond)
				if pid > 0 && syscall.Kill(pid, 0) == nil {
					if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(st), ") Z ") {
						syscall.Kill(pid, syscall.SIGKILL)
						t.Errorf("the stand-in's child %d outlived the timeout", pid)
					}
				}
			}
		})
	}
}
