package recall

import (
	"fmt"
	"strings"
	"testing"
)

func TestChunkerBoundsAndCoverage(t *testing.T) {
	c := newChunker()
	var lines []contentLine
	words := []string{"alpha", "beta", "部署", "gamma", "delta", "생산", "epsilon"}
	for i := 0; i < 300; i++ {
		n := 5 + (i*37)%400
		if i%50 == 0 {
			n = 3000 // a long message cut into several segments
		}
		var b []byte
		for k := 0; k < n; k++ {
			b = append(b, words[(i+k)%len(words)]...)
			b = append(b, ' ')
		}
		lines = append(lines, contentLine{line: i + 2, unit: unit{text: fmt.Sprintf("L%d %s", i+2, b), id: fmt.Sprintf("id%d", i)}})
	}
	for _, l := range lines {
		c.add(l)
	}
	chunks := c.finish()
	all := ""
	prevStart := 0
	for _, ch := range chunks {
		if w := weightedLen(ch.Text); w > chunkMaxChars+chunkOverlapChars {
			t.Errorf("chunk %d-%d weighs %d", ch.StartLine, ch.EndLine, w)
		}
		if ch.StartLine > ch.EndLine || ch.StartLine < prevStart {
			t.Errorf("line range %d-%d after start %d", ch.StartLine, ch.EndLine, prevStart)
		}
		prevStart = ch.StartLine
		all += ch.Text + "\n"
	}
	// Every line's marker lands in a chunk whose range includes the line.
	for _, l := range lines {
		marker := fmt.Sprintf("L%d ", l.line)
		found := false
		for _, ch := range chunks {
			if strings.Contains(ch.Text, marker) && ch.StartLine <= l.line && l.line <= ch.EndLine {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("line %d not in a chunk citing it", l.line)
		}
	}
	// No word is split: every space-separated token is a whole word.
	for _, tok := range strings.Fields(all) {
		if strings.HasPrefix(tok, "L") || tok == "…" {
			continue
		}
		ok := false
		for _, w := range words {
			if tok == w {
				ok = true
			}
		}
		if !ok {
			t.Errorf("split word %q", tok)
			break
		}
	}
}

func TestExtractLine(t *testing.T) {
	x := extractor{maxChars: 100}
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{`{"type":"message","id":"a1","timestamp":"2026-03-02T09:00:05.120Z","message":{"role":"user","content":[{"type":"text","text":"Add a\n  flag"},{"type":"image","data":"iVBOR","mimeType":"image/png"}],"timestamp":1772442005110}}`, "User: Add a flag [image]", true},
		{`{"type":"message","id":"a2","message":{"role":"assistant","content":[{"type":"thinking","thinking":"why"},{"type":"toolCall","id":"t","name":"edit","arguments":{"path":"a.go","newText":"x\ny"}}]}}`, "Assistant: (thinking: why) [tool call edit path a.go newText x y]", true},
		{`{"type":"message","id":"a3","message":{"role":"bashExecution","command":"go test","output":"ok"}}`, "Bash: $ go test → ok", true},
		{`{"type":"custom_message","customType":"lint","content":"gofmt needed","id":"a4"}`, "Custom (lint): gofmt needed", true},
		{`{"type":"compaction","id":"a5","summary":"## Goal\nShip it"}`, "Compaction summary: ## Goal Ship it", true},
		{`{"type":"branch_summary","id":"a6","summary":"Tried X"}`, "Branch summary: Tried X", true},
		{`{"type":"custom","customType":"model-snapshot","data":{"secret":"never"},"id":"a7"}`, "", true},
		{`{"type":"model_change","id":"a8","provider":"x","modelId":"y"}`, "", true},
		{`{"type":"message","message":{"role":"user","content":"one"}}{"type":"message","message":{"role":"user","content":"two"}}`, "User: one|User: two", false},
		{`{"type":"message","message":{"role":"user","content":"tor`, "", false},
		{`   `, "", true},
		// A field of an unexpected type is ignored, as pi ignores it: the line
		// is not malformed and its text is found (encoding/json rejected the
		// whole line, so it was reported malformed and never searchable).
		{`{"type":"message","id":5,"message":{"role":"user","content":"zebra-77 note","timestamp":"soon"}}`, "User: zebra-77 note", true},
		{`[1,2]`, "", false},
	} {
		units, ok := x.extractLine([]byte(tc.line))
		var got []string
		for _, u := range units {
			got = append(got, u.text)
		}
		if strings.Join(got, "|") != tc.want || ok != tc.ok {
			t.Errorf("extract %s\n got %q ok=%v\nwant %q ok=%v", tc.line, strings.Join(got, "|"), ok, tc.want, tc.ok)
		}
	}
	// Tool results are capped head + tail.
	long := strings.Repeat("a", 300) + "TAILMARK"
	units, _ := x.extractLine([]byte(`{"type":"message","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"HEADMARK` + long + `"}]}}`))
	if len(units) != 1 || len(units[0].text) > 140 || !strings.Contains(units[0].text, "HEADMARK") || !strings.Contains(units[0].text, "TAILMARK") {
		t.Errorf("cap: %q", units[0].text)
	}
	// Timestamps: message ms, seconds below 1e11, else the entry's ISO time.
	for raw, want := range map[string]int64{`1772442005110`: 1772442005110, `1772442005`: 1772442005000, `"2026-03-02T09:00:05.120Z"`: 1772442005120} {
		units, _ := x.extractLine([]byte(`{"type":"message","message":{"role":"user","content":"x","timestamp":` + raw + `}}`))
		if units[0].ts != want {
			t.Errorf("timestamp %s → %d, want %d", raw, units[0].ts, want)
		}
	}
}

func TestSnippetAndScores(t *testing.T) {
	text := strings.Repeat("filler words here ", 100) + "the NEEDLE is here " + strings.Repeat("more filler ", 50)
	s := snippet(text, []string{"needle"}, 700)
	if utf16Len(s) > 700 || !strings.Contains(s, "NEEDLE") || !strings.HasPrefix(s, "…") {
		t.Errorf("snippet %d units: %q", utf16Len(s), s)
	}
	if got := snippet("short", []string{"x"}, 700); got != "short" {
		t.Errorf("short snippet %q", got)
	}
	if c := Citation("/a/b.jsonl", 12, 20); c != "/a/b.jsonl#L12-L20" {
		t.Errorf("citation %q", c)
	}
	if c := Citation("/a/b.jsonl", 7, 7); c != "/a/b.jsonl#L7" {
		t.Errorf("citation %q", c)
	}
}

// cjkWords and the bigram table's text of the same input: each CJK word's
// overlapping pairs, lower-cased, then its last character alone (a
// one-character word whole); a query word's phrase is its own pairs, a
// one-character query word the prefix of tokens.
func TestCJKWords(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                   {"", ""},
		"plain english only": {"", ""},
		"部署到生产环境之前必须先运行迁移脚本07d0号，并通知值班工程师。": {"部署到生产环境之前必须先运行迁移脚本07d0号 并通知值班工程师",
			"部署 署到 到生 生产 产环 环境 境之 之前 前必 必须 须先 先运 运行 行迁 迁移 移脚 脚本 本0 07 7d d0 0号 号 并通 通知 知值 值班 班工 工程 程师 师"},
		"run kubectl 在生产环境 then 好的_v2 ok": {"在生产环境 好的_v2", "在生 生产 产环 环境 境 好的 的_ _v v2 2"},
		"run 好 then Ab的_V2 ok":            {"好 Ab的_V2", "好 ab b的 的_ _v v2 2"},
		"한국어 text and 日本語テキスト":            {"한국어 日本語テキスト", "한국 국어 어 日本 本語 語テ テキ キス スト ト"},
		"assembly的 部署":                    {"assembly的 部署", "as ss se em mb bl ly y的 的 部署 署"},
	} {
		if got := cjkWords(in); got != want[0] {
			t.Errorf("cjkWords(%q) = %q, want %q", in, got, want[0])
		}
		if got := cjkBigrams(in); got != want[1] {
			t.Errorf("cjkBigrams(%q) = %q, want %q", in, got, want[1])
		}
	}
	if got := cjkPhrase("生产环境"); got != `"生产 产环 环境"` {
		t.Errorf("cjkPhrase = %s", got)
	}
	if got := cjkPrefix("生"); got != `"生"*` {
		t.Errorf("cjkPrefix = %s", got)
	}
}

// Skipping the lines that hold no query word changes no score: textScore
// equals a plain count over every line's tokens.
func TestTextScoreSkipsNothingItNeeds(t *testing.T) {
	terms := queryTermsOf([]string{"deploy", "foo_bar", "café", "生产"})
	c := corpus{n: 5000, avgdl: 40, df: []int64{10, 3, 7, 2}}
	texts := []struct{ text, kinds string }{
		{"User: nothing here at all\nTool result (bash): still nothing, just words", "ct"},
		{"User: we DEPLOY on Fridays\nAssistant: foo-bar and Foo_Bar differ", "cc"},
		{"Tool result (read): le Café est ouvert; deploy\nUser: 部署到生产环境", "tc"},
		{"Assistant: deployment is not deploy; deployed", "c"},
	}
	for _, tc := range texts {
		got := textScore(tc.text, tc.kinds, terms, c)
		// The reference: every line tokenized.
		var want float64
		{
			var lt lineTokens
			idf := make([]float64, len(terms))
			var idfSum float64
			for i := range terms {
				idf[i] = c.idf(i)
				idfSum += idf[i]
			}
			tf := make([]float64, len(terms))
			present := make([]bool, len(terms))
			dl, best := 0, 0.0
			for li, line := range strings.Split(tc.text, "\n") {
				w := 1.0
				if tc.kinds[li] == kindTool {
					w = toolWeight
				}
				lt.read(line)
				dl += len(lt.ends)
				in := 0.0
				for i, tm := range terms {
					n := 0
					if tm.cjk {
						n = strings.Count(strings.ToLower(line), tm.tok)
					} else {
						n = lt.count(tm.seq)
					}
					if n > 0 {
						tf[i] += w * float64(n)
						present[i] = true
						in += idf[i]
					}
				}
				best = max(best, w*in/idfSum)
			}
			norm := k1 * (1 - bm25B + bm25B*float64(dl)/c.avgdl)
			var cov, sat float64
			for i := range terms {
				if present[i] {
					cov += idf[i]
				}
				sat += idf[i] * tf[i] * (k1 + 1) / (tf[i] + norm)
			}
			want = coverageWeight*cov/idfSum + lineWeight*best + satWeight*sat/(idfSum*(k1+1))
		}
		if got != want {
			t.Errorf("%q: textScore %v, every line tokenized %v", tc.text, got, want)
		}
	}
}

// A base64 run of blobChars is found wherever it starts and whatever
// surrounds it (stripBlobs looks at one byte in 256); shorter runs and
// long runs of one letter case are kept.
func TestStripBlobsAtEveryOffset(t *testing.T) {
	blob := strings.Repeat("QUJDZGVmZ2hpams0NTY3", 13)[:blobChars] // upper, lower, digits
	for pad := 0; pad < 300; pad += 7 {
		for _, tail := range []string{"", " end", " " + strings.Repeat("x ", 150)} {
			s := strings.Repeat("a ", pad/2) + strings.Repeat("z", pad%2) + " " + blob + tail
			var x extractor
			got := x.stripBlobs(s)
			if strings.Contains(got, blob[:40]) || x.leftOut.Blobs != 1 || x.leftOut.BlobBytes != int64(blobChars) {
				t.Fatalf("pad %d tail %d: %+v, %q", pad, len(tail), x.leftOut, got)
			}
		}
	}
	var x extractor
	for _, keep := range []string{strings.Repeat("a b ", 200), blob[:blobChars-1] + " " + strings.Repeat("y ", 200),
		strings.Repeat("abcdefgh", 64), strings.Repeat("-", 600)} {
		if got := x.stripBlobs(keep); got != keep {
			t.Errorf("kept text changed: %.60q → %.60q", keep, got)
		}
	}
}
