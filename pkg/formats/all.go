package formats

// Every format's folder is linked (blank imports here; shared.go names
// their Format constants) so its converter registers itself (its init
// calls conv.Register): Open, NewLineConverter, Format.String and
// ReadOnlyError find the formats through the registry only.
import (
	_ "github.com/ctxtool/ctxtool/pkg/formats/claudecode"
	_ "github.com/ctxtool/ctxtool/pkg/formats/codex"
)
