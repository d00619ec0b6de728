package prune

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Every real transcript of ../shared/fixtures/wild (pi, OpenClaw, Claude
// Code, Codex) archives (pi/OpenClaw with dedupe), reads back through
// transcript.Load with the same entries and context as the original, and
// unarchives byte for byte. Logs the ratios on real sessions.
func TestWildArchiveRoundTrip(t *testing.T) {
	wild := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(wild, "*", "*.jsonl"))
	if len(files) < 8 {
		t.Fatalf("found %d wild transcripts in %s: the corpus moved", len(files), wild)
	}
	var orig, packed, stored, replaced int64
	for _, src := range files {
		dir := t.TempDir()
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(src))
		os.WriteFile(p, data, 0o644)
		old := time.Now().Add(-90 * 24 * time.Hour)
		os.Chtimes(p, old, old)
		before, err := transcript.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		sn, _ := formats.SniffFile(p)
		o := ArchiveOptions{Settle: time.Millisecond}
		if sn.Format == formats.Pi {
			o.BlobStore = filepath.Join(dir, BlobDir)
		}
		info, err := Archive(context.Background(), p, p+Suffix, o)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		after, err := transcript.Load(p + Suffix)
		if err != nil {
			t.Fatalf("%s archived: %v", src, err)
		}
		if len(after.Entries) != len(before.Entries) || len(after.Malformed) != len(before.Malformed) {
			t.Errorf("%s: archived, %d entries / %d malformed, original %d / %d", src, len(after.Entries), len(after.Malformed), len(before.Entries), len(before.Malformed))
		}
		st, _ := os.Stat(p + Suffix)
		orig += info.Size
		packed += st.Size()
		stored += info.BlobsAdded
		replaced += info.BlobBytes
		if _, err := Unarchive(context.Background(), p+Suffix, ""); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
			t.Fatalf("%s: unarchive is not byte-identical", src)
		}
	}
	t.Logf("%d real transcripts, %d bytes: archives %d (%.2f×); image bytes replaced %d, stored %d",
		len(files), orig, packed, float64(orig)/float64(packed), replaced, stored)
}
