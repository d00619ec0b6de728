package estimate

import "github.com/ctxtool/ctxtool/pkg/tokenizer"

// tokenizers resolves "o200k"/"cl100k" to a counter. The nil check keeps a
// failed lookup from becoming a non-nil TextCounter holding a nil pointer.
func tokenizers(name string) (TextCounter, error) {
	t, err := tokenizer.Get(name)
	if err != nil {
		return nil, err
	}
	return t, nil
}
