package claudecode_test

import (
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Claude Code 2.1.3xx writes what it sends the model beside the prompt —
// the skill and agent listings, the environment, the permission mode, the
// commit attribution — as attachment records whose "rendered" content is
// the text sent (renderedRole user or system). Claude Code 2.1.332's own
// requests (internal/agentkit, the matrix test) carried ~10,000 chars of
// them on every turn: a reader that leaves them out estimates the
// context at a seventh of what was sent. They are context messages
// (custom, like Codex's developer messages), in the tree where they hang;
// an attachment without rendered content stays a link only.
func TestClaudeCodeRenderedAttachmentsAreContext(t *testing.T) {
	skills := "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- dataviz: charts\n</system-reminder>"
	attribution := "<system-reminder>\nAttribution for git commits: Co-Authored-By\n</system-reminder>"
	lines := []string{
		`{"type":"permission-mode","permissionMode":"bypassPermissions","sessionId":"s1"}`,
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"Hello there"},"uuid":"00000000-0000-4000-8000-000000000001","timestamp":"2026-12-02T05:00:00.000Z","sessionId":"s1","cwd":"/p","version":"2.1.332"}`,
		`{"parentUuid":"00000000-0000-4000-8000-000000000001","isSidechain":false,"attachment":{"type":"skill_listing"},"type":"attachment","uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2026-12-02T05:00:00.100Z","rendered":[{"content":` + jsonQuote(skills) + `}],"renderedRole":"system","sessionId":"s1","cwd":"/p","version":"2.1.332"}`,
		`{"parentUuid":"00000000-0000-4000-8000-000000000002","isSidechain":false,"attachment":{"type":"session_context"},"type":"attachment","uuid":"00000000-0000-4000-8000-000000000003","timestamp":"2026-12-02T05:00:00.200Z","sessionId":"s1","cwd":"/p","version":"2.1.332"}`,
		`{"parentUuid":"00000000-0000-4000-8000-000000000003","isSidechain":false,"attachment":{"type":"remote_session_change"},"type":"attachment","uuid":"00000000-0000-4000-8000-000000000004","timestamp":"2026-12-02T05:00:00.300Z","rendered":[{"content":` + jsonQuote(attribution) + `}],"renderedRole":"user","sessionId":"s1","cwd":"/p","version":"2.1.332"}`,
		`{"parentUuid":"00000000-0000-4000-8000-000000000004","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"Noted."}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":2}},"uuid":"00000000-0000-4000-8000-000000000005","timestamp":"2026-12-02T05:00:01.000Z","sessionId":"s1","cwd":"/p","version":"2.1.332"}`,
	}
	s := loadLines(t, "s1.jsonl", lines)
	var roles []string
	custom := 0
	for _, m := range s.Context().Messages {
		roles = append(roles, m.Role)
		if m.Role == "custom" {
			custom += m.Entry.Chars
		}
	}
	if got := strings.Join(roles, ","); got != "user,custom,custom,assistant" {
		t.Errorf("context roles %s; want user,custom,custom,assistant (the two rendered attachments in tree order)", got)
	}
	if want := len(skills) + len(attribution); custom != want {
		t.Errorf("the attachments count %d chars in the context; they sent %d", custom, want)
	}
}

// loadLines loads the session made of lines, in a file named name.
func loadLines(t *testing.T, name string, lines []string) *transcript.Session {
	t.Helper()
	s := testkit.Load(t, testkit.WriteTemp(t, name, []byte(strings.Join(lines, "\n")+"\n")))
	t.Cleanup(func() { s.Close() })
	return s
}

func jsonQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
