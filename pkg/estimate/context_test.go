package estimate

import (
	"slices"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The context a usage record was sent with, found as a prefix of the
// context in force where it can be, is the one BuildContext rebuilds from
// the path up to the record, for every record of real, vendored and
// generated sessions (compactions, branches, errored replies).
func TestRecordMessagesEqualsBuildContext(t *testing.T) {
	var sessions []*transcript.Session
	for _, f := range realFiles(t) {
		s := testkit.Load(t, f)
		t.Cleanup(func() { s.Close() })
		sessions = append(sessions, s)
	}
	for seed := uint64(1); seed <= 4; seed++ {
		sessions = append(sessions, generatedSession(t, sessiongen.Options{Seed: seed, Turns: 120, Compactions: int(seed) * 3, Branches: 2, ToolResultBytes: 200}))
	}
	prefixes := 0
	for _, s := range sessions {
		ctx := s.Context()
		for _, r := range AuditContext(ctx, 0).Records {
			got := recordMessages(ctx, r)
			want := transcript.BuildContext(ctx.Path[:r.PathIndex+1]).Messages
			if !slices.Equal(got, want) {
				t.Fatalf("%s: record at line %d: %d messages, BuildContext %d", s.File, r.Line(), len(got), len(want))
			}
			if len(got) > 0 && &got[0] == &ctx.Messages[0] {
				prefixes++
			}
		}
	}
	if prefixes == 0 {
		t.Fatal("no record's context was found as a prefix of the context in force")
	}
}
