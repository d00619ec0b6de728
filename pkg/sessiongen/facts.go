package sessiongen

// PlantedFact is a distinctive identifier planted in a generated session so
// recall and compaction tests can look for it later.
type PlantedFact struct {
	Kind    string // "path", "uuid", "hash", "port", "url", "cjk", "decision"
	Value   string // the exact string to search for
	Text    string // the sentence it was planted in
	Line    int    // 1-based line of the entry holding it
	EntryID string // entry id (synthetic in v1)
	Role    string // message role of that entry
	Turn    int    // 0-based user turn
}
