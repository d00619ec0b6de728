package codex_test

import (
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Codex 0.171's view_image answers with an output of content items, an
// input_image among them (the real codex's rollout, internal/agentkit):
// the image is what the next request sends, and pi counts an image as
// 4,800 chars. A reader keeping only the output's text items left an
// empty result and estimated the real session 31% under what Codex sent.
func TestCodexToolOutputImageIsContext(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	lines := []string{
		`{"timestamp":"2026-12-02T05:43:46.594Z","type":"session_meta","payload":{"id":"01a23547-c887-7f90-97e4-2b7b5ccab601","timestamp":"2026-12-02T05:43:46.572Z","cwd":"/p","originator":"codex_exec","cli_version":"0.171.0","model_provider":"fake"}}`,
		`{"timestamp":"2026-12-02T05:43:46.600Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Look at the pixel."}]}}`,
		`{"timestamp":"2026-12-02T05:43:46.700Z","type":"response_item","payload":{"type":"function_call","status":"completed","id":"fc_call_w3","name":"view_image","arguments":"{\"path\":\"/p/pixel.png\"}","call_id":"call_w3"}}`,
		`{"timestamp":"2026-12-02T05:43:47.054Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_w3","output":[{"type":"input_text","text":"pixel.png"},{"type":"input_image","image_url":"data:image/png;base64,` + png + `","detail":"high"}]}}`,
		`{"timestamp":"2026-12-02T05:43:47.100Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A pixel."}]}}`,
	}
	s := loadLines(t, "rollout-2026-12-02T05-43-46-01a23547-c887-7f90-97e4-2b7b5ccab601.jsonl", lines)
	var result *transcript.Entry
	for _, m := range s.Context().Messages {
		if m.Role == "toolResult" {
			result = m.Entry
		}
	}
	if result == nil {
		t.Fatal("no tool result in the context")
	}
	if want := len("pixel.png") + 4800; result.Chars != want {
		t.Errorf("the view_image result counts %d chars; want %d (its text and pi's 4,800 for the image)", result.Chars, want)
	}
}
