package recall

import (
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"modernc.org/sqlite"
)

// The SQLite index stores each chunk's text once, compressed with zstd
// (one frame per chunk, column chunks.text as a BLOB). The text was 60-75%
// of the index: 33 MB of a 56 MB index of a 105 MB Claude Code corpus,
// 70 of 118 MB of a CJK-heavy one. The full-text tables are contentless
// already, so this is the only copy; it is read back for the candidates a
// search scores and for display (chunkText), and by LIKE scans through the
// SQL function recallTextFunc. PostgreSQL keeps plain text (TOAST
// compresses it already).
//
// The text stored is the text the extractor produced, after whatever it
// leaves out or redacts: chunkText is the one place the index's text comes
// back from, so displayed text is exactly what was indexed.

// recallTextFunc is the SQL function that decompresses a chunks.text
// value: unicode61 LIKE scans of short CJK words run on the text, not on
// the bytes.
const recallTextFunc = "ctxtool_recall_text"

var (
	zOnce sync.Once
	zEnc  *zstd.Encoder
	zDec  *zstd.Decoder
)

func zInit() {
	zOnce.Do(func() {
		// Both are safe for concurrent EncodeAll/DecodeAll. The fastest
		// level: the writer's CPU is what limits a cold index, and the
		// default level saved only 3% more on chunk-sized texts, at 1.6x
		// the CPU. The fastest level compresses chunks at about 85 MB
		// per CPU-second (a frame's tables are set up per chunk): 10-15%
		// of a cold index's CPU, in the chunk writer, which runs beside
		// the busier FTS writer. s2 was 3x faster but left the text 1.5x
		// smaller, not 1.8-1.95x.
		zEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true))
		zDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true))
	})
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(recallTextFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		b, ok := args[0].([]byte)
		if !ok {
			if s, isStr := args[0].(string); isStr {
				return s, nil // not compressed (never written so, but harmless)
			}
			return nil, fmt.Errorf("%s: want a blob, got %T", recallTextFunc, args[0])
		}
		return chunkText(b)
	})
}

// packText compresses a chunk's text for chunks.text.
func packText(s string) []byte {
	zInit()
	return zEnc.EncodeAll([]byte(s), make([]byte, 0, len(s)/3+16))
}

// chunkText is a stored chunk's text as the index holds it (see above):
// what search scores and prints.
func chunkText(b []byte) (string, error) {
	zInit()
	out, err := zDec.DecodeAll(b, make([]byte, 0, len(b)*4))
	if err != nil {
		return "", fmt.Errorf("a chunk's stored text is damaged (%v): delete the index to rebuild it", err)
	}
	return string(out), nil
}
