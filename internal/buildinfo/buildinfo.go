// Package buildinfo holds the version of this build of volanogo.
//
// Release builds set Version, Commit and Date with the linker:
//
//	go build -ldflags "-X github.com/volanogo/volanogo/internal/buildinfo.Version=v1.2.3 ..."
//
// A binary built with `go install module@version` has none of them set;
// Get then falls back to the module version and VCS settings recorded by
// the Go toolchain (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X at release time.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info describes one build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
	Modified  bool   `json:"modified,omitempty"`
}

// Get returns the build's version information, from the linker flags when
// set and from the embedded build information otherwise.
func Get() Info {
	return get(Version, Commit, Date, debug.ReadBuildInfo)
}

func get(version, commit, date string, read func() (*debug.BuildInfo, bool)) Info {
	// GoReleaser's snapshot builds without git information pass "none"
	// and "unknown": no better than nothing.
	for _, v := range []*string{&version, &commit, &date} {
		if *v == "none" || *v == "unknown" {
			*v = ""
		}
	}
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// String is the one-line form printed by `volanogo version`.
func (i Info) String() string {
	s := "volanogo " + i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		s += fmt.Sprintf(" (commit %s", c)
		if i.Date != "" {
			s += ", built " + i.Date
		}
		s += ")"
	}
	return s + " " + i.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
