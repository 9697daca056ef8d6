// Package buildinfo is the version stamped into the binaries by the release
// build (-ldflags -X), with the module's build info as the fallback: the
// module version of `go install ...@VERSION`, and the commit Go stamps
// into a build from a git checkout (vcs.revision, vcs.time, vcs.modified).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by goreleaser: -X github.com/deadletter/deadletter/internal/buildinfo.Version=...
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// String is the one-line version of a binary called name.
func String(name string) string {
	bi, _ := debug.ReadBuildInfo()
	return format(name, Version, Commit, Date, bi) + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// format is the version line from the stamped values, else from the
// build info (which may be nil): "dla version v1.2.0 (0123456789ab,
// 2026-01-02T03:04:05Z)", with ", modified" when the checkout had
// uncommitted changes. A build that has no commit says why, so that "dev"
// is never all there is to go on.
func format(name, version, commit, date string, bi *debug.BuildInfo) string {
	modified := false
	if bi != nil {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		stamped := commit != ""
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && !stamped:
				commit = s.Value
			case s.Key == "vcs.time" && !stamped && date == "":
				date = s.Value
			case s.Key == "vcs.modified" && !stamped:
				modified = s.Value == "true"
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	out := fmt.Sprintf("%s version %s", name, version)
	switch {
	case commit != "":
		out += " (" + commit
		if date != "" {
			out += ", " + date
		}
		if modified {
			out += ", modified"
		}
		out += ")"
	case version == "dev":
		out += " (commit unknown: built without VCS information, as with -buildvcs=false or outside a git clone)"
	}
	return out
}
