package sessiongen

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestUsageFollowsDocumentedFormula re-derives every assistant's usage from
// the written file with the formula in the package doc, independently of
// the builder's bookkeeping (linear session: no compaction or branch).
func TestUsageFollowsDocumentedFormula(t *testing.T) {
	var buf bytes.Buffer
	o := Options{Seed: 21, Turns: 24, Thinking: true, CJKShare: 0.3, UserImages: 2, ToolImages: 2, BashExecutions: 3,
		CustomMessages: 2, ModelChanges: 2, AbortedAssistants: 1, ErrorAssistants: 1, ToolErrors: 1, SystemTokens: 3000}
	res, err := Generate(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Data      string          `json:"data"`
		Name      string          `json:"name"`
		ID        string          `json:"id"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type line struct {
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		CustomType string          `json:"customType"`
		Message    struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"toolCallId"`
			Command    string          `json:"command"`
			Output     string          `json:"output"`
			StopReason string          `json:"stopReason"`
			Excluded   bool            `json:"excludeFromContext"`
			Usage      struct {
				Input, Output, CacheRead, CacheWrite, TotalTokens int
			} `json:"usage"`
		} `json:"message"`
	}
	blocks := func(raw json.RawMessage) []block {
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			_ = json.Unmarshal(raw, &s)
			return []block{{Type: "text", Text: s}}
		}
		var bs []block
		if err := json.Unmarshal(raw, &bs); err != nil {
			t.Fatal(err)
		}
		return bs
	}
	// kind of a tool result: prose for markdown read by `read`, code otherwise
	mdCalls := map[string]bool{}
	cost := func(bs []block, textKind Kind) int {
		n := 4
		for _, b := range bs {
			switch b.Type {
			case "text":
				n += TrueTokens(b.Text, textKind)
			case "thinking":
				n += TrueTokens(b.Thinking, KindProse)
			case "image":
				w, h, ok := PNGSize(b.Data)
				if !ok {
					t.Fatalf("image block is not a PNG")
				}
				n += int(math.Ceil(float64(w*h) / 750))
			case "toolCall":
				n += 8 + TrueTokens(b.Name, KindCode) + TrueTokens(string(b.Arguments), KindCode)
				if b.Name == "read" && strings.Contains(string(b.Arguments), `.md"`) {
					mdCalls[b.ID] = true
				}
			}
		}
		return n
	}
	ctx := o.SystemTokens
	checked := 0
	for i, raw := range bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))[1:] {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		m := l.Message
		switch {
		case l.Type == "custom_message":
			ctx += cost(blocks(l.Content), KindProse)
		case l.Type != "message":
		case m.Role == "user":
			ctx += cost(blocks(m.Content), KindProse)
		case m.Role == "toolResult":
			k := KindCode
			if mdCalls[m.ToolCallID] {
				k = KindProse
			}
			ctx += cost(blocks(m.Content), k)
		case m.Role == "bashExecution":
			if !m.Excluded {
				ctx += 4 + 6 + TrueTokens(m.Command, KindCode) + TrueTokens(m.Output, KindCode)
			}
		case m.Role == "assistant":
			own := cost(blocks(m.Content), KindProse)
			u := m.Usage
			if m.StopReason == "aborted" || m.StopReason == "error" {
				if u.Input+u.Output+u.CacheRead+u.CacheWrite+u.TotalTokens != 0 {
					t.Errorf("line %d: %s assistant with usage %+v", i+2, m.StopReason, u)
				}
				continue
			}
			if u.Input+u.CacheRead+u.CacheWrite != ctx || u.Output != own || u.TotalTokens != ctx+own {
				t.Fatalf("line %d: usage %+v, want prompt %d output %d", i+2, u, ctx, own)
			}
			ctx += own
			checked++
		}
	}
	if checked < 50 || ctx != res.Context.TrueTokens {
		t.Fatalf("checked %d assistants; ground truth %d, Result %d", checked, ctx, res.Context.TrueTokens)
	}
}

func TestTrueTokens(t *testing.T) {
	for _, c := range []struct {
		s    string
		k    Kind
		want int
	}{
		{"", KindProse, 0},
		{"hello world", KindProse, 3},   // ceil(11/4.2)
		{"func main() {}", KindCode, 5}, // ceil(14/3.3)
		{"部署计划", KindProse, 4},          // 4 CJK
		{"部署 plan。", KindCode, 5},       // 3 CJK + ceil(6/3.3)=2
		{"𠀀x", KindProse, 2},            // astral CJK counts once, not as 2 units
		{"😀😀😀😀", KindProse, 2},          // 8 UTF-16 units / 4.2
		{strings.Repeat("a", 42), KindProse, 10},
	} {
		if got := TrueTokens(c.s, c.k); got != c.want {
			t.Errorf("TrueTokens(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	if ImageTokens(800, 600) != 640 || ImageTokens(4000, 3000) != ImageTokens(1568, 1176) {
		t.Errorf("ImageTokens: %d %d %d", ImageTokens(800, 600), ImageTokens(4000, 3000), ImageTokens(1568, 1176))
	}
	p := MakePNG(321, 123, 1)
	if w, h, ok := PNGSize(p.Base64); !ok || w != 321 || h != 123 {
		t.Errorf("PNGSize = %d %d %v", w, h, ok)
	}
}
