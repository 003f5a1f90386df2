// Package version is the one place govs's binaries take their version from.
package version

import "runtime/debug"

// Govs is the release of this build; `-ldflags "-X
// github.com/govs-project/govs/internal/version.Govs=1.2.3"` overrides it.
var Govs = "0.6.0-dev"

// String is Govs plus the VCS revision when the binary was built from a
// git checkout (go build stamps it), e.g. "0.6.0-dev (055fb28)".
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Govs
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if rev == "" {
		return Govs
	}
	if dirty {
		rev += "+dirty"
	}
	return Govs + " (" + rev + ")"
}
