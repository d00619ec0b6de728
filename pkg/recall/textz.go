package recall

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
)

// The SQLite index stores the text of the chunks it cannot read again
// from their session file (reread.go says which: zstd files, store
// sessions, Claude Code and Codex files, chunks of very long lines)
// compressed, in column chunks.text (a BLOB); the other chunks' value
// there is a ref to their lines (tag refTag). The text was 60-75% of the
// index: 33 MB of a 56 MB index of a 105 MB Claude Code corpus, 70 of 118
// MB of a CJK-heavy one, before compression. The full-text tables are
// contentless, so this is the only copy; it is read back for the
// candidates a search scores and for display, by the FTS repair and for
// embeddings, all through rereader.chunkTexts (reread.go), which calls
// chunkText for stored text. PostgreSQL keeps plain text (TOAST
// compresses it already).
//
// A chunk is a kilobyte or two: alone, it compresses only 1.5-2x. Each
// index therefore makes a dictionary from its first dictSample bytes of
// chunk text and keeps it in the table text_dicts; later chunks are
// compressed with it. Chunks written before it are compressed without,
// and decode without it. A value names its dictionary's id; the
// dictionaries seen are kept by id (zDicts), and one not seen yet (another
// process made it after this one opened the index) is loaded from the
// indexes open in this process.
//
// The compressor is s2 (Snappy's format, extended) with a dictionary, not
// zstd: on the text of a 524 MB Claude Code corpus zstd's fastest level
// with a dictionary took 20% of a cold index's CPU (2.6 s; frames of 1-2
// KB, tables set up per frame) and made the chunk writer the busiest
// stage. On the 69 MB of text of a CJK-heavy corpus, after the first 1 MB:
// zstd with a dictionary 3.9x in 1.25 CPU-s, s2 with one 3.0x in 0.31 s
// (real fixtures: 2.5x against 1.85x).
//
// A stored value is a tag byte, 0 (no dictionary) or 1 followed by the
// dictionary's id as a uvarint, then an s2 block; or refTag and a ref.
//
// The text stored is the text the extractor produced, after whatever it
// leaves out or redacts, and a ref's text is the extractor's again (run
// with the same settings on the same lines, checked against the stored
// length and CRC): displayed text is exactly what was indexed.

// dictSample is how much chunk text makes an index's dictionary (of at
// most s2.MaxDictSize bytes, every seventh chunk of it).
const dictSample = 1 << 20

// textEnc is a dictionary to compress with and its id (d nil: none).
type textEnc struct {
	id uint32
	d  *s2.Dict
}

// zDicts are the dictionaries seen, by id; loaders load the dictionaries
// of the indexes open in this process.
var zDicts = struct {
	sync.Mutex
	dec     map[uint32]*s2.Dict
	loaders map[*sqliteStore]func() error
}{dec: map[uint32]*s2.Dict{}, loaders: map[*sqliteStore]func() error{}}

// registerDict makes values of dictionary id decodable.
func registerDict(id uint32, d *s2.Dict) {
	zDicts.Lock()
	defer zDicts.Unlock()
	if zDicts.dec[id] == nil {
		zDicts.dec[id] = d
	}
}

// dictByID is dictionary id, loading the open indexes' dictionaries once
// if it is not known yet.
func dictByID(id uint32) *s2.Dict {
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

// packText compresses a chunk's text for chunks.text.
func packText(e textEnc, s string) []byte {
	if e.d == nil {
		out := make([]byte, 1, s2.MaxEncodedLen(len(s))+1)
		return append(out, s2.Encode(out[1:cap(out)], []byte(s))...)
	}
	out := binary.AppendUvarint([]byte{1}, uint64(e.id))
	return append(out, e.d.Encode(nil, []byte(s))...)
}

// chunkText is a stored chunk's text (tags 0 and 1, see above);
// rereader.chunkTexts calls it for the values that are not refs.
func chunkText(b []byte) (string, error) {
	var out []byte
	var err error
	switch {
	case len(b) > 0 && b[0] == 0:
		out, err = s2.Decode(nil, b[1:])
	case len(b) > 0 && b[0] == 1:
		id, n := binary.Uvarint(b[1:])
		if n <= 0 {
			err = fmt.Errorf("bad dictionary id")
			break
		}
		d := dictByID(uint32(id))
		if d == nil {
			return "", fmt.Errorf("a chunk's stored text needs compression dictionary %d, which the index does not hold: delete the index to rebuild it", id)
		}
		out, err = d.Decode(nil, b[1+n:])
	default:
		err = fmt.Errorf("unknown format")
	}
	if err != nil {
		return "", fmt.Errorf("a chunk's stored text is damaged (%w): delete the index to rebuild it", err)
	}
	return string(out), nil
}

// textDict is a store's compression state: its dictionary once there is
// one, and the sample that makes it until then.
type textDict struct {
	mu      sync.Mutex
	enc     textEnc // d nil: no dictionary yet
	sample  [][]byte
	sampled int
	tried   bool // making it failed: go on without
}

// encoder is the dictionary for the next chunks; without one, it first
// adds text to the sample.
func (t *textDict) encoder(text string) textEnc {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.enc.d == nil && !t.tried && t.sampled < dictSample {
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
		d := s2.NewDict(dict)
		if d == nil {
			return fmt.Errorf("compression dictionary %d is damaged: delete the index to rebuild it", id)
		}
		registerDict(uint32(id), d)
		s.dict.mu.Lock()
		if s.dict.enc.d == nil {
			s.dict.enc, s.dict.sample = textEnc{id: uint32(id), d: d}, nil
		}
		s.dict.mu.Unlock()
	}
	return rows.Err()
}

// trainDict makes the index's dictionary once the sample is full and
// stores it in the batch's transaction; the batch's later chunks use it
// (b.enc), and the store's after the commit. A rolled back batch takes the
// dictionary and every chunk that used it along. An index that has one
// already (another process's) is given it instead.
func (b *sqliteBatch) trainDict(ctx context.Context) error {
	t := &b.s.dict
	t.mu.Lock()
	ready := b.enc.d == nil && t.enc.d == nil && !t.tried && t.sampled >= dictSample
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
	for i := 0; i < len(sample) && len(hist) < s2.MaxDictSize; i += 7 {
		hist = append(hist, sample[i]...)
	}
	d := s2.MakeDict(hist[:min(len(hist), s2.MaxDictSize)], nil)
	if d == nil {
		t.mu.Lock()
		t.tried, t.sample = true, nil
		t.mu.Unlock()
		return nil // no dictionary, as before the sample was full
	}
	var rb [4]byte
	rand.Read(rb[:])
	id := binary.LittleEndian.Uint32(rb[:])
	registerDict(id, d)
	if _, err := b.tx.ExecContext(ctx, `INSERT INTO text_dicts(id, dict) VALUES(?, ?)`, int64(id), d.Bytes()); err != nil {
		return err
	}
	b.enc = textEnc{id: id, d: d}
	return nil
}

// encoder is the dictionary for the batch's next chunk of text.
func (b *sqliteBatch) encoder(text string) textEnc {
	if b.enc.d != nil {
		return b.enc
	}
	return b.s.dict.encoder(text)
}

// dictDone hands the batch's new dictionary to the store once the batch
// committed (ok), or drops it and starts a new sample.
func (b *sqliteBatch) dictDone(ok bool) {
	if b.enc.d == nil {
		return
	}
	t := &b.s.dict
	t.mu.Lock()
	if ok && t.enc.d == nil {
		t.enc = b.enc
	}
	t.sample, t.sampled = nil, 0
	t.mu.Unlock()
	b.enc = textEnc{}
}
