package estimate

import "github.com/ctxtool/ctxtool/pkg/tokenizer"

func init() {
	Tokenizers = func(name string) (TextCounter, error) {
		t, err := tokenizer.Get(name)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}
