package rolling

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// piWriter appends v3 message lines the way pi does: one
// appendFileSync(JSON.stringify(entry) + "\n") per entry, no lock, each
// entry a child of the writer's leaf. With rereadLeaf the leaf is the id of
// the file's last line before every append (a writer that reloads); without
// it the leaf is the writer's own last entry, as a running pi keeps it in
// memory.
type piWriter struct {
	path       string
	rereadLeaf bool
	leaf       string
	lines      [][]byte
}

func lastEntryID(t testing.TB, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return ""
	}
	b = bytes.TrimRight(b, "\n")
	var e struct {
		ID string `json:"id"`
	}
	json.Unmarshal(b[bytes.LastIndexByte(b, '\n')+1:], &e)
	return e.ID
}

func (w *piWriter) append(t testing.TB, i int) {
	var id [4]byte
	rand.Read(id[:])
	if w.rereadLeaf || w.leaf == "" {
		w.leaf = lastEntryID(t, w.path)
	}
	now := time.Now().UTC()
	role, body := "user", fmt.Sprintf(`"content":[{"type":"text","text":"concurrent user message %d: please keep going with the importer %s"}]`, i, strings.Repeat("and the tests ", 20))
	if i%2 == 1 {
		role, body = "assistant", fmt.Sprintf(`"content":[{"type":"text","text":"concurrent answer %d: %s"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop"`, i, strings.Repeat("done with that part. ", 20))
	}
	line := fmt.Sprintf(`{"type":"message","id":"%s","parentId":"%s","timestamp":"%s","message":{"role":"%s",%s,"timestamp":%d}}`,
		hex.EncodeToString(id[:]), w.leaf, now.Format("2006-01-02T15:04:05.000Z"), role, body, now.UnixMilli())
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := f.Write([]byte(line + "\n")); err != nil {
		t.Error(err)
	}
	f.Close()
	w.leaf = hex.EncodeToString(id[:])
	w.lines = append(w.lines, []byte(line))
}

func TestRollWhilePiAppends(t *testing.T) {
	for _, reread := range []bool{false, true} {
		t.Run(fmt.Sprintf("rereadLeaf=%v", reread), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "live.jsonl")
			sessiongen.Write(t, path, sessiongen.Options{Seed: 31, Turns: 40, ToolCallsPerTurn: 4})
			orig, _ := os.ReadFile(path)
			w := &piWriter{path: path, rereadLeaf: reread}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var rollsSoFar atomic.Int32
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				// 400 appends, and more while fewer than 3 rolls have run
				// (a loaded machine slows the rolls, not the writer), up to
				// a minute.
				start := time.Now()
				for i := 0; i < 400 || (rollsSoFar.Load() < 3 && time.Since(start) < time.Minute); i++ {
					w.append(t, i)
					// pi appends in bursts: an assistant's tool results come
					// within milliseconds, then the next model call takes
					// seconds (here compressed to 30 ms).
					if i%5 == 4 {
						time.Sleep(30 * time.Millisecond)
					} else {
						time.Sleep(time.Duration(i%2) * time.Millisecond)
					}
				}
			}()
			// Roll over and over while the writer runs: a 20k window at 50 %
			// makes nearly every run evict.
			r := inWindow(newRoller(Options{TargetUtilization: 0.5, MinKeepMessages: 10, EvictionNote: true, Force: true, Wait: 10 * time.Second}), 20000)
			rolls, refused := 0, 0
			var failures []string
			for ctx.Err() == nil {
				rep := r.Roll(context.Background(), path)
				switch {
				case rep.Error != "" && strings.Contains(rep.Error, "changed while ctxtool was planning"):
					// A clean refusal: pi kept writing faster than a re-plan
					// (a loaded CI machine); nothing was written.
					refused++
				case rep.Error != "":
					failures = append(failures, rep.Error)
				}
				if rep.Rolled {
					rolls++
					rollsSoFar.Add(1)
				}
			}
			wg.Wait()
			if len(failures) > 0 {
				t.Fatalf("%d of the rolls failed while pi appends, first: %s", len(failures), failures[0])
			}
			if rolls < 3 {
				t.Fatalf("only %d rolls ran during the writes (%d refused); the test proves nothing", rolls, refused)
			}
			t.Logf("%d rolls, %d clean refusals while pi appended", rolls, refused)

			final, _ := os.ReadFile(path)
			if !bytes.HasPrefix(final, orig) {
				t.Fatal("original bytes changed")
			}
			have := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(final))
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				have[sc.Text()] = true
			}
			for i, l := range w.lines {
				if !have[string(l)] {
					t.Fatalf("appended line %d is lost or damaged", i)
				}
			}
			s := testkit.Load(t, path)
			s.Close()
			if len(s.Malformed) > 0 {
				t.Fatalf("malformed lines after concurrent writes: %+v", s.Malformed)
			}
			res := oracle.CheckOne(t, path)
			if !res.Loads || res.BrokenParents != 0 || len(res.MalformedLines) != 0 || res.OrphanToolResults != 0 {
				t.Fatalf("pi: loads %v broken %d malformed %v orphans %d", res.Loads, res.BrokenParents, res.MalformedLines, res.OrphanToolResults)
			}
			t.Logf("%d rolls during %d pi appends; pi loads %d entries, %d compactions on the path (%d in the file), context %d messages",
				rolls, len(w.lines), res.Entries, res.CompactionsOnPath, res.CompactionsInFile, res.ContextMessages)
		})
	}
}
