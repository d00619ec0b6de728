package recall_test

import (
	"encoding/base64"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// longOutput is n bytes of varied prose-like tool output (no word of the
// planted ones) with word at byte at.
func longOutput(r *rand.Rand, n, at int, word string) string {
	words := strings.Fields("ok compiling package linking module cache hit miss step done retry worker queue flush")
	var b strings.Builder
	for b.Len() < n {
		if at >= 0 && b.Len() >= at {
			b.WriteString(word + " ")
			at = -1
		}
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// Tool results, tool-call arguments and bash output are indexed whole: a
// word that occurs only past the first 4,000 characters (in the middle
// that the old head+tail cut dropped, and deep in a 60 KB output) is found,
// in its own chunk. Base64 blobs and images are left out and counted.
func TestWholeToolTextIsFound(t *testing.T) { eachBackend(t, testWholeToolTextIsFound) }

func testWholeToolTextIsFound(t *testing.T, k kit) {
	p := filepath.Join(t.TempDir(), "long.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b := sessiongen.NewBuilder(f, sessiongen.Config{Seed: 3})
	b.UserText("Run the subagent and report.")
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall("c1", "task", sessiongen.Obj{
		{K: "prompt", V: longOutput(r, 9000, 6000, "wolframite7731")}})}})
	b.ToolResultText("c1", "task", longOutput(r, 20000, 9000, "quillback4402"))
	blob := base64.StdEncoding.EncodeToString(func() []byte {
		x := make([]byte, 3000)
		for i := range x {
			x[i] = byte(r.IntN(256))
		}
		return x
	}())
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall("c2", "bash", sessiongen.Obj{{K: "command", V: "make logs"}})}})
	b.ToolResultText("c2", "bash", longOutput(r, 60000, 52000, "tarpon9915")+" data:image/png;base64,"+blob+" end of log")
	b.BashExecution(sessiongen.BashExecution{Command: "cat build.log", Output: longOutput(r, 12000, 7000, "gadwall5520")})
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ix := k.open(t)
	st := indexAll(t, ix, p)[0]
	if st.LeftOut.Blobs != 1 || st.LeftOut.BlobBytes != int64(len(blob)) {
		t.Errorf("left out %+v, want the one base64 blob of %d bytes", st.LeftOut, len(blob))
	}
	for _, w := range []string{"wolframite7731", "quillback4402", "tarpon9915", "gadwall5520", "log"} {
		hits := searchHits(t, ix, w, recall.SearchOptions{MaxResults: 3})
		if len(hits) == 0 || !strings.Contains(strings.ToLower(hits[0].Snippet), w) {
			t.Errorf("%s (past the first 4,000 characters): %d hits, first %+v", w, len(hits), hits)
		}
	}
	if hits := searchHits(t, ix, blob[100:140], recall.SearchOptions{}); len(hits) != 0 {
		t.Errorf("a piece of the base64 blob was found: %s", hits[0].Citation)
	}
	d, err := recall.Dump(ix)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range d {
		for _, row := range rows {
			if strings.Contains(row, blob[:64]) {
				t.Fatal("the base64 blob is in a chunk")
			}
		}
	}
	sz, err := ix.Sizes(t.Context())
	if err != nil || sz.Corpus != st.Bytes || sz.Index <= 0 {
		t.Errorf("sizes %+v %v, want the corpus %d bytes and some index", sz, err, st.Bytes)
	}
}

// An image block is left out and counted; binary output becomes a marker.
func TestImagesAndBinaryLeftOut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "img.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	b := sessiongen.NewBuilder(f, sessiongen.Config{Seed: 4})
	b.User(sessiongen.User{Blocks: []sessiongen.Block{sessiongen.Text("look at this screenshot of the pelican9 chart"), sessiongen.ImageBlock(sessiongen.MakePNG(4, 4, 0))}})
	b.BashExecution(sessiongen.BashExecution{Command: "cat a.out", Output: strings.Repeat("\x01\x02ELF\x00\x03", 100)})
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ix := kits[0].open(t)
	st := indexAll(t, ix, p)[0]
	if st.LeftOut.Images != 1 || st.LeftOut.Blobs != 1 || st.LeftOut.BlobBytes != 700 {
		t.Errorf("left out %+v, want 1 image and the 700-byte binary output", st.LeftOut)
	}
	if hits := searchHits(t, ix, "pelican9", recall.SearchOptions{}); len(hits) != 1 || !strings.Contains(hits[0].Snippet, "[image]") {
		t.Errorf("pelican9: %+v", hits)
	}
}
