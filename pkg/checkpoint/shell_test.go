package checkpoint

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestShellWrites: the write forms a shell command names, and what it
// must leave out (expansions, /dev/…, fd duplications, input, here-doc
// bodies, quoted '>').
func TestShellWrites(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{`printf 'Ledger zq-ledger-7 moves to Postgres.\n' > notes.txt`, []string{"notes.txt"}},
		{`echo hi >> log/out.log 2>&1`, []string{"log/out.log"}},
		{`echo hi>f1&&echo x 1>f2; cmd &> both.log`, []string{"f1", "f2", "both.log"}},
		{`make 2> err.txt >/dev/null`, []string{"err.txt"}},
		{`echo 'a > b' "c > d" > ./real.txt`, []string{"real.txt"}},
		{`echo x > "$OUT"; echo y > ~/z; echo w > *.txt; echo v > $(mktemp)`, nil},
		{`sort < in.txt > out.txt`, []string{"out.txt"}},
		{`cat > .gitignore <<'EOF'` + "\nnode_modules/ > nope\ntarget/\nEOF\necho done > after.txt", []string{".gitignore", "after.txt"}},
		{`ls | tee -a list.txt copy.txt`, []string{"list.txt", "copy.txt"}},
		{`sed -i 's/a/b/' main.go util.go`, []string{"main.go", "util.go"}},
		{`sed -i.bak -e 's/a/b/' x.cfg`, []string{"x.cfg"}},
		{`sed -n 's/a/b/p' main.go`, nil},
		{`sed 's/a/b/' in > out`, []string{"out"}},
		{`cp -r src/a.go dst/b.go && mv old.txt new.txt`, []string{"dst/b.go", "new.txt"}},
		{`cp a.txt b.txt backup/`, []string{"backup/a.txt", "backup/b.txt"}},
		{`mv -t done/ one.md`, []string{"done/one.md"}},
		{`cp ../lib/x.ts .`, []string{"x.ts"}},
		{`bash -lc "echo x > inner.txt"`, []string{"inner.txt"}},
		{`ls /nonexistent-zq-dir`, nil},
		{"*** Begin Patch\n*** Update File: a.rs\n@@\n-    /// x, y\n+    fn z() -> Vec<u8>, x\n*** End Patch", nil},
		{`git commit -m "cp a b > c"`, nil},
		{"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: README.md\n@@\n-a\n+b\n*** Add File: docs/q.md\n+x > y\n*** End Patch\nPATCH", []string{"README.md", "docs/q.md"}},
		{`echo x > /tmp/a\ b.txt`, []string{"/tmp/a b.txt"}},
		{`# echo x > comment.txt` + "\ntrue", nil},
	} {
		if got := shellWrites(tc.cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("shellWrites(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestCallWrites: a call's arguments as Codex, pi and Claude Code give
// them, classified by tool name — Codex's exec_command cmd, its shell
// argv (apply_patch direct and through bash -lc), apply_patch's free-form
// input, a workdir; a non-shell tool's "command" is no script.
func TestCallWrites(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: tests/test_cli.py\n+import sys\n*** Update File: opk/a.py\n*** Move to: opk/b.py\n*** Delete File: old.py\n*** End Patch"
	argv, _ := json.Marshal([]string{"apply_patch", patch})
	lc, _ := json.Marshal([]string{"bash", "-lc", "echo x > out.txt"})
	input, _ := json.Marshal(map[string]string{"input": patch})
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"exec_command", `{"cmd":"printf 'x\\n' > notes.txt"}`, []string{"notes.txt"}},
		{"exec_command", `{"cmd":"printf x > notes.txt","workdir":"/w/billing"}`, []string{"/w/billing/notes.txt"}},
		{"shell", `{"command":` + string(argv) + `}`, []string{"tests/test_cli.py", "opk/a.py", "opk/b.py", "old.py"}},
		{"shell", `{"command":` + string(lc) + `,"workdir":"/p"}`, []string{"/p/out.txt"}},
		{"local_shell", `{"type":"exec","command":` + string(lc) + `,"working_directory":"/q"}`, []string{"/q/out.txt"}},
		{"apply_patch", string(input), []string{"tests/test_cli.py", "opk/a.py", "opk/b.py", "old.py"}},
		{"Bash", `{"command":"cat > /abs/conf.yaml <<EOF\nk: v\nEOF"}`, []string{"/abs/conf.yaml"}},
		{"str_replace_based_edit_tool", `{"command":"create","path":"x.go"}`, nil},
		{"web_search", `{"command":"echo x > y"}`, nil},
	} {
		c := classify(ToolCall{Name: tc.name, Args: json.RawMessage(tc.args)})
		if !reflect.DeepEqual(c.writes, tc.want) {
			t.Errorf("%s %s: writes %q, want %q", tc.name, tc.args, c.writes, tc.want)
		}
	}
}

// TestShellWritesFollowsCd: paths after a cd are where the cd went (the
// pi sessions of testdata/external cd before their cp, mv and sed -i
// ”); after a cd the words do not place, relative paths are left out.
func TestShellWritesFollowsCd(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"cd /w/src\n# fix\nsed -i '' 's|from \"./config.js\"|from \"../utils/config.js\"|g' core/export-html.ts", []string{"/w/src/core/export-html.ts"}},
		{`cd /w/src && mv changelog.ts config.ts utils/`, []string{"/w/src/utils/changelog.ts", "/w/src/utils/config.ts"}},
		{`cd pkg && echo x > a.txt && cd .. && echo y > b.txt`, []string{"pkg/a.txt", "b.txt"}},
		{`cd "$DIR" && echo x > a.txt; echo y > /abs/b.txt`, []string{"/abs/b.txt"}},
		{`for f in a b; do cp "$f" out/; done; if true; then echo x > c.txt; fi`, []string{"c.txt"}},
		{`sed -i '' '/undefined,$/d' packages/tui/test/markdown.test.ts`, []string{"packages/tui/test/markdown.test.ts"}},
	} {
		if got := shellWrites(tc.cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("shellWrites(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
