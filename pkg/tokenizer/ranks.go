package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// loadRanks reads an embedded rank table ("<base64 token> <rank>" per
// line) as the offline loader does, streaming it from the binary into a
// map sized once: the loader's copy of the file, its split into lines and
// words and the map's growth were 34 MB of garbage for a 13 MB table,
// allocated by every command that counts exactly or summarises.
func loadRanks(name string) (map[string]int, error) {
	n, err := scanRanks(name, nil)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int, n)
	if _, err := scanRanks(name, ranks); err != nil {
		return nil, err
	}
	return ranks, nil
}

// scanRanks counts the table's entries and, when ranks is not nil, fills
// it.
func scanRanks(name string, ranks map[string]int) (int, error) {
	f, err := assets.Assets.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var token []byte
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			n++
			if ranks != nil {
				var perr error
				if token, perr = parseRank(line, token, ranks); perr != nil {
					return 0, fmt.Errorf("%s: %w", name, perr)
				}
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// parseRank adds one line's token and rank to ranks, decoding into buf.
func parseRank(line, buf []byte, ranks map[string]int) ([]byte, error) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return buf, fmt.Errorf("line %q: no rank", line)
	}
	if need := base64.StdEncoding.DecodedLen(sp); cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:cap(buf)]
	k, err := base64.StdEncoding.Decode(buf, line[:sp])
	if err != nil {
		return buf, err
	}
	rank := 0
	for _, c := range line[sp+1:] {
		if c < '0' || c > '9' {
			return buf, fmt.Errorf("line %q: rank is not a number", line)
		}
		rank = rank*10 + int(c-'0')
	}
	ranks[string(buf[:k])] = rank
	return buf, nil
}
