package estimate

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif"  // register decoders for DecodeConfig
	_ "image/jpeg" // register decoders for DecodeConfig
	_ "image/png"  // register decoders for DecodeConfig
	"math"
)

// PiImageTokens is what pi's heuristic charges for an image in a tool result
// or custom message (4800 chars / 4); user-message images count 0 in pi.
const PiImageTokens = 1200

// imageTokens estimates what a vision model charges for an image from its
// pixel size, read from the base64 header only: the image is scaled to fit
// 1568 px on the long edge and 1.15 megapixels, then w×h/750 (Anthropic's
// published rule; OpenAI's tile rule lands in the same range). Unknown
// formats get pi's flat 1200.
func imageTokens(b64 string) int {
	// 4 KB of base64 is 3 KB of image: enough for any header.
	head := b64
	if len(head) > 4096 {
		head = head[:4096]
	}
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil && len(raw) == 0 {
		return PiImageTokens
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return PiImageTokens
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if long := math.Max(w, h); long > 1568 {
		w, h = w*1568/long, h*1568/long
	}
	if mp := w * h; mp > 1.15e6 {
		f := math.Sqrt(1.15e6 / mp)
		w, h = w*f, h*f
	}
	return int(math.Ceil(w * h / 750))
}
