// Package buildinfo is the version stamped into the binaries by the release
// build (-ldflags -X), with the module's build info as the fallback.
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
	version, commit, date := Version, Commit, Date
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.time" && date == "":
				date = s.Value
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
	if commit != "" {
		out += " (" + commit
		if date != "" {
			out += ", " + date
		}
		out += ")"
	}
	return out + " " + runtime.GOOS + "/" + runtime.GOARCH
}
