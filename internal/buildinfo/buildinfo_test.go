package buildinfo

import (
	"runtime/debug"
	"testing"
)

func vcs(revision, time, modified string) *debug.BuildInfo {
	return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: revision}, {Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified},
	}}
}

// TestVersionNamesTheCommitFromTheBuildInfo pins what `version` prints for
// each way a binary is built: the commit Go stamped from the checkout
// (and whether it had uncommitted changes), the module version of go
// install, the release's stamped values, and a build with none of them,
// which says why there is no commit instead of a bare "dev".
func TestVersionNamesTheCommitFromTheBuildInfo(t *testing.T) {
	const rev = "d50c01c291b956851fec3233bc18e7f6fc8863f9"
	cases := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"a clean checkout", "", "", "", vcs(rev, "2026-12-02T14:19:06Z", "false"),
			"dla version dev (d50c01c291b9, 2026-12-02T14:19:06Z)"},
		{"a checkout with changes", "", "", "", vcs(rev, "2026-12-02T14:19:06Z", "true"),
			"dla version dev (d50c01c291b9, 2026-12-02T14:19:06Z, modified)"},
		{"go install @version", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			"dla version v1.4.0"},
		{"the release", "1.4.0", "0123456789abcdef", "2026-12-01T00:00:00Z", vcs(rev, "2026-12-02T14:19:06Z", "true"),
			"dla version 1.4.0 (0123456789ab, 2026-12-01T00:00:00Z)"},
		{"no VCS information", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"dla version dev (commit unknown: built without VCS information, as with -buildvcs=false or outside a git clone)"},
		{"no build info", "", "", "", nil,
			"dla version dev (commit unknown: built without VCS information, as with -buildvcs=false or outside a git clone)"},
	}
	for _, tc := range cases {
		if got := format("dla", tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
