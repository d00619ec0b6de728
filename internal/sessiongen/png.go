package sessiongen

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// PNG is a generated image: base64 data (no "data:" prefix, as pi stores it)
// plus the dimensions written in its IHDR chunk.
type PNG struct {
	Width, Height int
	Base64        string
}

var pngCache sync.Map // [3]int{w,h,variant} → PNG

// MakePNG returns a valid, deterministic PNG of the given size that looks
// vaguely like a screenshot (title bar, panels, text rows) and compresses
// to a few KB even at 1280×800. variant changes the layout.
func MakePNG(width, height, variant int) PNG {
	key := [3]int{width, height, variant}
	if v, ok := pngCache.Load(key); ok {
		return v.(PNG)
	}
	pal := color.Palette{
		color.RGBA{0xf5, 0xf5, 0xf5, 0xff},
		color.RGBA{0x2d, 0x2d, 0x30, 0xff},
		color.RGBA{0x00, 0x7a, 0xcc, 0xff},
		color.RGBA{0xc5, 0x30, 0x30, 0xff},
		color.RGBA{0x9c, 0x9c, 0x9c, 0xff},
	}
	img := image.NewPaletted(image.Rect(0, 0, width, height), pal)
	fill := func(x0, y0, x1, y1 int, c uint8) {
		for y := max(y0, 0); y < min(y1, height); y++ {
			row := img.Pix[y*img.Stride:]
			for x := max(x0, 0); x < min(x1, width); x++ {
				row[x] = c
			}
		}
	}
	bar := max(height/20, 2)
	fill(0, 0, width, bar, 1)
	side := width / 5
	fill(0, bar, side, height, 4)
	// "text" rows: short dark dashes whose lengths depend on variant and row
	for i, y := 0, bar+6; y+3 < height; i, y = i+1, y+max(height/40, 4) {
		n := (i*7 + variant*13) % 9
		for k, x := 0, side+8; k < n && x < width-10; k++ {
			w := 6 + (i*k+variant)%20
			c := uint8(1)
			if (i+k+variant)%11 == 0 {
				c = 3
			} else if (i+k)%5 == 0 {
				c = 2
			}
			fill(x, y, x+w, y+2, c)
			x += w + 4
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	_ = enc.Encode(&buf, img) // writing to a bytes.Buffer cannot fail
	p := PNG{Width: width, Height: height, Base64: base64.StdEncoding.EncodeToString(buf.Bytes())}
	pngCache.Store(key, p)
	return p
}

// PNGSize reads width and height from a base64 PNG's IHDR chunk; ok is
// false when data is not a PNG. Tests use it to check image blocks.
func PNGSize(b64 string) (w, h int, ok bool) {
	n := min(len(b64), 44) // 33 bytes of signature + IHDR
	n -= n % 4
	raw, err := base64.StdEncoding.DecodeString(b64[:n])
	if err != nil || len(raw) < 24 || !bytes.Equal(raw[:8], []byte("\x89PNG\r\n\x1a\n")) || string(raw[12:16]) != "IHDR" {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(raw[16:20])), int(binary.BigEndian.Uint32(raw[20:24])), true
}
