package recall_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// speechSession writes a session shaped like the real one where search
// ranked meaninglessly: a Python voice assistant built over many turns, in
// which "SpeechRecognition" and "pyttsx" each come up again and again — pip
// output and code that hold both, explanations that name one per line —
// and one user line asks for both. It returns that line's number.
func speechSession(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := sessiongen.NewBuilder(f, sessiongen.Config{Seed: 7, Cwd: "/home/dev/voicebot"})
	r := rand.New(rand.NewPCG(7, 7))
	filler := strings.Fields(`the loop reads audio frames from the device and hands each phrase to the engine then waits
	for silence before it returns a transcript we log every step so a failure shows which stage broke and the
	config file keeps the language the energy threshold and the voice rate in one place`)
	prose := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = filler[r.IntN(len(filler))]
		}
		return strings.Join(w, " ")
	}
	call := 0
	tool := func(name, out string) {
		call++
		id := fmt.Sprintf("call_%d", call)
		b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text(prose(12)),
			sessiongen.ToolCall(id, name, sessiongen.Obj{{K: "command", V: "python assistant.py"}})}})
		b.ToolResultText(id, name, out)
	}
	b.UserText("I want a small voice assistant in Python that runs on my laptop. " + prose(20))
	for turn := 0; turn < 40; turn++ {
		switch turn % 4 {
		case 0:
			tool("bash", "Collecting SpeechRecognition\n  Downloading SpeechRecognition-3.10.4-py2.py3-none-any.whl\n"+
				"Collecting pyttsx\n  Using cached pyttsx-1.1.tar.gz\nSuccessfully installed SpeechRecognition-3.10.4 pyttsx-1.1\n"+prose(60))
		case 1:
			b.AssistantText("SpeechRecognition wraps several engines and needs PyAudio for the microphone. " + prose(30) +
				"\n\nThe speech output goes through pyttsx, which drives espeak on Linux. " + prose(30))
		case 2:
			tool("read", "import speech_recognition as sr  # the SpeechRecognition package\nimport pyttsx\n"+
				"engine = pyttsx.init()\nr = sr.Recognizer()  # SpeechRecognition's recognizer\n"+prose(80))
		case 3:
			b.UserText(prose(15) + " it still fails sometimes, SpeechRecognition times out. " + prose(10))
		}
		if turn == 22 {
			b.UserText("Keep SpeechRecognition for listening and pyttsx for the spoken replies, both offline.")
		}
	}
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The target line: find it in the file (the builder numbers lines).
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Keep SpeechRecognition for listening") {
			return i + 1
		}
	}
	t.Fatal("target line not written")
	return 0
}

func searchHits(t testing.TB, ix *recall.Index, q string, opts recall.SearchOptions) []recall.Hit {
	t.Helper()
	res, err := ix.Search(context.Background(), q, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Hits
}

// The line holding both words is the best hit at every --max-results,
// every top-k is the prefix of the top-12, and the scores are not all
// the same (they were all 1.000).
func TestRankingSpeechRecognition(t *testing.T) { eachBackend(t, testRankingSpeechRecognition) }

func testRankingSpeechRecognition(t *testing.T, k kit) {
	p := filepath.Join(t.TempDir(), "voice.jsonl")
	target := speechSession(t, p)
	ix := k.open(t)
	indexAll(t, ix, p)
	for _, q := range []string{"SpeechRecognition pyttsx", "pyttsx SpeechRecognition", "SpeechRecognition pyttsx engine"} {
		both := !strings.HasSuffix(q, "engine") // (the line holds no "engine")
		all := searchHits(t, ix, q, recall.SearchOptions{MaxResults: 12})
		if len(all) < 8 {
			t.Fatalf("%q: %d hits, want at least 8 (the session mentions both words all over)", q, len(all))
		}
		distinct := map[float64]bool{}
		for _, h := range all {
			distinct[h.Score] = true
			if h.Score <= 0 || h.Score >= 1 {
				t.Errorf("%q: score %v outside (0,1)", q, h.Score)
			}
		}
		if len(distinct) < len(all)/2 {
			t.Errorf("%q: %d distinct scores among %d hits: the scores saturate", q, len(distinct), len(all))
		}
		for n := 1; n <= 12; n++ {
			hits := searchHits(t, ix, q, recall.SearchOptions{MaxResults: n})
			if both && (len(hits) == 0 || hits[0].StartLine > target || hits[0].EndLine < target) {
				t.Errorf("%q --max-results %d: best hit %+v, want the chunk of line %d", q, n, hits[0].Citation, target)
			}
			for i, h := range hits {
				if h.Citation != all[i].Citation || h.Score != all[i].Score {
					t.Errorf("%q: top-%d's hit %d is %s %.4f, the top-12's %s %.4f: not a prefix", q, n, i+1,
						h.Citation, h.Score, all[i].Citation, all[i].Score)
					break
				}
			}
		}
	}
}

// A threshold means the same for every query: a chunk holding only half
// of a query's words (by weight) stays under the semantic history's 0.6,
// one holding all of them passes it, and --min-score filters.
func TestScoreThresholds(t *testing.T) { eachBackend(t, testScoreThresholds) }

func testScoreThresholds(t *testing.T, k kit) {
	p := filepath.Join(t.TempDir(), "voice.jsonl")
	speechSession(t, p)
	ix := k.open(t)
	indexAll(t, ix, p)
	// No chunk holds both: the per-word fallback finds chunks with one.
	half := searchHits(t, ix, "pyttsx kubernetes", recall.SearchOptions{MaxResults: 50})
	if len(half) == 0 {
		t.Fatal("pyttsx kubernetes: no hits")
	}
	for _, h := range half {
		if h.Score >= 0.6 {
			t.Errorf("pyttsx kubernetes: %s scores %.3f with half of the query, want < 0.6", h.Citation, h.Score)
		}
	}
	if hits := searchHits(t, ix, "pyttsx kubernetes", recall.SearchOptions{MaxResults: 50, MinScore: 0.6}); len(hits) != 0 {
		t.Errorf("min score 0.6 kept %d half matches", len(hits))
	}
	full := searchHits(t, ix, "SpeechRecognition pyttsx", recall.SearchOptions{MaxResults: 50, MinScore: 0.6})
	if len(full) == 0 {
		t.Fatal("SpeechRecognition pyttsx: nothing at 0.6")
	}
	all := searchHits(t, ix, "SpeechRecognition pyttsx", recall.SearchOptions{MaxResults: 50})
	some := searchHits(t, ix, "SpeechRecognition pyttsx", recall.SearchOptions{MaxResults: 50, MinScore: 0.8})
	if len(some) == 0 || len(some) >= len(all) {
		t.Errorf("min score 0.8 kept %d of %d hits: it should keep the best and drop some", len(some), len(all))
	}
}
