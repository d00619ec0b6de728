package recall

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/binary"
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
// A chunk is a kilobyte or two: alone, zstd makes it only 1.8-1.95x
// smaller. Each index therefore trains a dictionary on its first
// dictSample bytes of chunk text and keeps it in the table text_dicts;
// later chunks are compressed with it (4x on generated corpora, 2.6x on
// the real fixtures). Chunks written before it stay plain zstd frames,
// which decode without it. A frame names its dictionary's id; the
// decoders of every dictionary seen are kept by id (zDicts), and one not
// seen yet (another process trained it after this one opened the index)
// is loaded from the indexes open in this process (dictLoaders).
//
// The text stored is the text the extractor produced, after whatever it
// leaves out or redacts: chunkText is the one place the index's text comes
// back from, so displayed text is exactly what was indexed.

// recallTextFunc is the SQL function that decompresses a chunks.text
// value: unicode61 LIKE scans of short CJK words run on the text, not on
// the bytes.
const recallTextFunc = "ctxtool_recall_text"

// dictSample is how much chunk text trains an index's dictionary.
const dictSample = 1 << 20

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

// zDicts are the decoders of the dictionaries seen, by id; dictLoaders
// load the dictionaries of the indexes open in this process.
var zDicts = struct {
	sync.Mutex
	dec     map[uint32]*zstd.Decoder
	loaders map[*sqliteStore]func() error
}{dec: map[uint32]*zstd.Decoder{}, loaders: map[*sqliteStore]func() error{}}

// registerDict makes frames of dictionary id decodable.
func registerDict(id uint32, dict []byte) error {
	zDicts.Lock()
	defer zDicts.Unlock()
	if zDicts.dec[id] != nil {
		return nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true), zstd.WithDecoderDicts(dict))
	if err != nil {
		return err
	}
	zDicts.dec[id] = d
	return nil
}

// dictDecoder is the decoder of dictionary id, loading the open indexes'
// dictionaries once if it is not known yet.
func dictDecoder(id uint32) *zstd.Decoder {
	zDicts.Lock()
	d := zDicts.dec[id]
	var loaders []func() error
	if d == nil {
		for _, l := range zDicts.loaders {
			loaders = append(loaders, l)
		}
	}
	zDicts.Unlock()
	if d != nil {
		return d
	}
	for _, l := range loaders {
		l()
	}
	zDicts.Lock()
	defer zDicts.Unlock()
	return zDicts.dec[id]
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

// packText compresses a chunk's text for chunks.text with enc (nil: no
// dictionary).
func packText(enc *zstd.Encoder, s string) []byte {
	if enc == nil {
		zInit()
		enc = zEnc
	}
	return enc.EncodeAll([]byte(s), make([]byte, 0, len(s)/3+16))
}

// chunkText is a stored chunk's text as the index holds it (see above):
// what search scores and prints.
func chunkText(b []byte) (string, error) {
	zInit()
	dec := zDec
	var h zstd.Header
	if err := h.Decode(b); err == nil && h.DictionaryID != 0 {
		if dec = dictDecoder(h.DictionaryID); dec == nil {
			return "", fmt.Errorf("a chunk's stored text needs compression dictionary %d, which the index does not hold: delete the index to rebuild it", h.DictionaryID)
		}
	}
	out, err := dec.DecodeAll(b, make([]byte, 0, len(b)*4))
	if err != nil {
		return "", fmt.Errorf("a chunk's stored text is damaged (%v): delete the index to rebuild it", err)
	}
	return string(out), nil
}

// textDict is a store's compression state: the encoder of its dictionary
// once there is one, and the sample that trains it until then.
type textDict struct {
	mu      sync.Mutex
	enc     *zstd.Encoder // nil: no dictionary yet
	sample  [][]byte
	sampled int
	tried   bool // training failed: go on without
}

// encoder is the encoder for the next chunks; without a dictionary, it
// first adds text to the sample.
func (t *textDict) encoder(text string) *zstd.Encoder {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.enc == nil && !t.tried && t.sampled < dictSample {
		t.sample = append(t.sample, []byte(text))
		t.sampled += len(text)
	}
	return t.enc
}

// loadDicts registers the dictionaries of the index and uses the first.
func (s *sqliteStore) loadDicts(ctx context.Context, q sqlQuerier) error {
	rows, err := q.QueryContext(ctx, `SELECT id, dict FROM text_dicts ORDER BY rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var dict []byte
		if err := rows.Scan(&id, &dict); err != nil {
			return err
		}
		if err := registerDict(uint32(id), dict); err != nil {
			return fmt.Errorf("compression dictionary %d: %v", id, err)
		}
		s.dict.mu.Lock()
		if s.dict.enc == nil {
			s.dict.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
				zstd.WithZeroFrames(true), zstd.WithEncoderDict(dict))
			s.dict.sample = nil
		}
		s.dict.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return rows.Err()
}

// trainDict trains the index's dictionary once the sample is full and
// stores it in the batch's transaction; the batch's later chunks use it
// (b.enc), and the store's after the commit. A rolled back batch takes the
// dictionary and every chunk that used it along. An index that has one
// already (another process's) is given it instead.
func (b *sqliteBatch) trainDict(ctx context.Context) error {
	t := &b.s.dict
	t.mu.Lock()
	ready := b.enc == nil && t.enc == nil && !t.tried && t.sampled >= dictSample
	sample := t.sample
	t.mu.Unlock()
	if !ready {
		return nil
	}
	var n int
	if err := b.tx.QueryRowContext(ctx, `SELECT count(*) FROM text_dicts`).Scan(&n); err != nil || n > 0 {
		if err == nil {
			err = b.s.loadDicts(ctx, b.tx)
		}
		return err
	}
	var hist []byte
	for i := 0; i < len(sample) && len(hist) < 100<<10; i += 7 {
		hist = append(hist, sample[i]...)
	}
	var rb [4]byte
	rand.Read(rb[:])
	id := 1<<15 + binary.LittleEndian.Uint32(rb[:])%(1<<30) // ids below 32768 are reserved
	dict, err := zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: sample, History: hist, Offsets: [3]int{1, 4, 8}, Level: zstd.SpeedFastest})
	var enc *zstd.Encoder
	if err == nil {
		enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true), zstd.WithEncoderDict(dict))
	}
	if err == nil {
		err = registerDict(id, dict)
	}
	if err != nil {
		t.mu.Lock()
		t.tried, t.sample = true, nil
		t.mu.Unlock()
		return nil // plain frames, as before the sample was full
	}
	if _, err := b.tx.ExecContext(ctx, `INSERT INTO text_dicts(id, dict) VALUES(?, ?)`, int64(id), dict); err != nil {
		return err
	}
	b.enc = enc
	return nil
}

// encoder is the encoder for the batch's next chunk of text.
func (b *sqliteBatch) encoder(text string) *zstd.Encoder {
	if b.enc != nil {
		return b.enc
	}
	return b.s.dict.encoder(text)
}

// dictDone hands the batch's new dictionary to the store once the batch
// committed (ok), or drops it and starts a new sample.
func (b *sqliteBatch) dictDone(ok bool) {
	if b.enc == nil {
		return
	}
	t := &b.s.dict
	t.mu.Lock()
	if ok && t.enc == nil {
		t.enc = b.enc
	}
	t.sample, t.sampled = nil, 0
	t.mu.Unlock()
	b.enc = nil
}
