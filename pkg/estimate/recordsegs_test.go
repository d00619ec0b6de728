package estimate

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The fit from the records' segments, walked beside the audit, is the fit
// of the two walks of the path after it (calibrate): the same weights,
// points, covered tokens and overhead, and the same audit, on generated
// sessions (compactions many and few, thinking, CJK, images, branches, v1),
// on sessions whose usage records lie (pinned, flat, zero, mirror replies)
// and on the real fixtures. Any difference in how a span, a context or an
// overhead is summed changes the overhead or the weights' last bits.
func TestRecordSegsFitIsTheTwoWalkFit(t *testing.T) {
	var files []string
	for _, o := range []sessiongen.Options{
		{Seed: 3, Turns: 200, Compactions: 20},
		{Seed: 9, Turns: 1500, Compactions: 300, ToolResultBytes: 400},
		{Seed: 4, Turns: 600, Compactions: 12, ToolResultBytes: 300, Thinking: true, CJKShare: 0.2},
		{Seed: 5, Turns: 300, Compactions: 3, Version: 1},
		{Seed: 6, Turns: 300, UserImages: 8, ToolImages: 8, BashExecutions: 5, CustomMessages: 5, Branches: 6, Compactions: 6, ModelChanges: 2},
		{Seed: 7, Turns: 300, Branches: 10, Compactions: 20, CompactionsWithin: 0.5},
	} {
		file := filepath.Join(t.TempDir(), "gen.jsonl")
		sessiongen.Write(t, file, o)
		files = append(files, file)
	}
	files = append(files, compactedBetweenRecords(t))
	for _, c := range usagekit.Write(t) {
		files = append(files, c.File)
	}
	files = append(files, oracle.Fixtures(t)...)
	wild, _ := filepath.Glob(filepath.Join(oracle.WildDir(t), "*", "*.jsonl"))
	files = append(files, wild...)

	restarts, usable := 0, 0
	for _, file := range files {
		s := testkit.Load(t, file)
		ctx := s.Context()
		window := models.ForSession(ctx.Path, s.Header, models.Settings{}).Tokens
		c := &Counter{s: s, images: map[*transcript.Entry]int{}}
		wantAudit := AuditContext(ctx, window)
		want := calibrate(ctx.Path, c.features, wantAudit)

		rs := walkRecordSegs(ctx.Path, transcript.KeptStarts(ctx.Path), c.features)
		if !rs.fits || len(rs.segs) != len(wantAudit.Records) {
			t.Fatalf("%s: %d segments (fit: %v) for %d records", file, len(rs.segs), rs.fits, len(wantAudit.Records))
		}
		gotAudit, got := auditAndCalibrate(ctx, window, c.features)
		if *got != *want {
			t.Errorf("%s: fitted beside the audit %+v, after it %+v", file, *got, *want)
		}
		if !reflect.DeepEqual(gotAudit, wantAudit) {
			t.Errorf("%s: the audit made beside the fit differs", file)
		}
		restarts += len(rs.restarts)
		if want.Usable {
			usable++
		}
		s.Close()
	}
	if restarts < 100 || usable < 10 {
		t.Fatalf("only %d compaction restarts and %d usable fits over %d files: is the test checking anything?", restarts, usable, len(files))
	}
}

// compactedBetweenRecords writes a session whose compactions come after
// messages that follow the last reply (the generator and the real files
// compact right after a reply), sometimes two in a row, keeping entries
// from before those messages: a segment then starts at the compaction, not
// at the reply before it.
func compactedBetweenRecords(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "between.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := sessiongen.NewBuilder(f, sessiongen.Config{Seed: 8, Provider: "anthropic", Model: "claude-sonnet-4-5", SystemTokens: 3000})
	var keep string
	for i := range 120 {
		id := b.UserText(strings.Repeat("question about the build ", 20+i%37))
		if i%5 == 0 {
			keep = id
		}
		b.AssistantText(strings.Repeat("an answer in prose. ", 30+i%23))
		if i%6 == 5 {
			b.UserText(strings.Repeat("a note before compacting ", 40+i))
			b.Compaction(sessiongen.Compaction{Summary: strings.Repeat("summary ", 50+i), FirstKeptEntryID: keep})
			if i%12 == 11 {
				b.UserText("and one more")
				b.Compaction(sessiongen.Compaction{Summary: strings.Repeat("shorter summary ", 10+i)})
			}
		}
	}
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}

// A segment whose features are not whole quarters or do not fit 32 bits
// (16 for the counts) is refused, and the fit then walks the path as
// before instead of summing a wrong number.
func TestSegmentRefusesWhatItCannotHold(t *testing.T) {
	ok := features{fProse: 1e6 + 0.75, fWide: 3, fThinking: 10.25, fImage: 1200, fMessage: 65535, fToolCall: 2}
	if s, fits := compact(ok); !fits || s.features() != ok {
		t.Fatalf("%+v: fits %v, back %+v", ok, fits, s.features())
	}
	for k, v := range map[int]float64{fProse: 1 << 31, fWide: 0.5, fThinking: 0.1, fImage: -1, fMessage: 65536, fToolCall: 1 << 20} {
		f := ok
		f[k] = v
		if _, fits := compact(f); fits {
			t.Errorf("%s = %v fitted a segment", featureNames[k], v)
		}
	}
}

// nth finds the value sorting would put at each index, on random data,
// many equal values and the orders that defeat a naive pivot.
func TestNthIsTheSortedValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][]int
	for _, n := range []int{1, 2, 3, 17, 100, 1000, 20000} {
		random, few, sorted, organ := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		for i := range n {
			random[i] = r.IntN(1_000_000) - 500_000
			few[i] = r.IntN(3)
			sorted[i] = i
			organ[i] = min(i, n-i)
		}
		reversed := slices.Clone(sorted)
		slices.Reverse(reversed)
		inputs = append(inputs, random, few, sorted, reversed, organ)
	}
	for _, in := range inputs {
		want := slices.Sorted(slices.Values(in))
		for _, k := range []int{0, len(in) / 3, len(in) / 2, len(in) - 1} {
			if got := nth(slices.Clone(in), k); got != want[k] {
				t.Fatalf("n=%d k=%d: %d, want %d", len(in), k, got, want[k])
			}
		}
	}
	if medianOverhead(nil) != 0 || medianOverhead([]int{-5, -3}) != 0 || medianOverhead([]int{9, 1, 4, 7}) != 7 {
		t.Fatal("medianOverhead: the upper median, 0 when none or negative")
	}
}
