package cmd

import (
	"runtime/debug"
	"strings"
)

// versionLine is what --version prints after "ctxtool version ": the
// release (or the module version `go install …@vX` stamped), then which
// commit it was built from, when that commit was made, and with which Go — so a bug report
// from a binary install names the exact build, not only "0.1.0-dev".
func versionLine(release string, info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return release
	}
	var revision, when string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	// A build from a checkout stamps a pseudo-version (v0.0.0-date-hash)
	// that only repeats the commit; `go install …@vX` stamps the release
	// and no revision.
	if v := info.Main.Version; release == defaultVersion && revision == "" && v != "" && v != "(devel)" {
		release = strings.TrimPrefix(v, "v")
	}
	var parts []string
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if dirty {
			revision += "+dirty"
		}
		parts = append(parts, "commit "+revision)
	}
	if when != "" {
		parts = append(parts, "committed "+when)
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	if len(parts) == 0 {
		return release
	}
	return release + " (" + strings.Join(parts, ", ") + ")"
}

// buildVersion is versionLine for the running binary.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	return versionLine(Version, info, ok)
}
