// Package version tells which build of warp or gyrum is running: the module
// version, the VCS revision and time, whether the tree was modified, and the
// Go toolchain, as the Go linker recorded them (runtime/debug.ReadBuildInfo).
//
// A release build may override what the build info says with the linker
// (goreleaser does):
//
//	-ldflags "-X github.com/gyrum-labs/warp/internal/version.version=v1.2.3
//	          -X github.com/gyrum-labs/warp/internal/version.commit=abc1234...
//	          -X github.com/gyrum-labs/warp/internal/version.date=2026-12-03T10:00:00Z"
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Devel is the version of a build whose version is unknown: `go run`, `go
// build` outside a tagged checkout, a test binary.
const Devel = "(devel)"

// Set by the linker (-X) for release builds; empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Info describes one build. Its JSON is what `warp version --json` and
// `gyrum version --json` print.
type Info struct {
	// Program is the binary's name: warp or gyrum.
	Program string `json:"program"`
	// Version is the module version (v1.2.3, or a pseudo-version), Devel
	// when unknown.
	Version string `json:"version"`
	// Commit is the full VCS revision, "" when unknown.
	Commit string `json:"commit,omitempty"`
	// CommitTime is the revision's commit time (RFC 3339, UTC), "" when
	// unknown.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified is true when the build's work tree had uncommitted changes.
	Modified bool `json:"modified"`
	// GoVersion is the toolchain that built the binary (go1.26.8).
	GoVersion string `json:"go"`
	// OS and Arch are the build target.
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Get returns the build information of the running binary, named program.
func Get(program string) Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(program, bi, version, commit, date)
}

// fromBuildInfo builds an Info from bi (nil: no build info) and the linker
// overrides (empty: none).
func fromBuildInfo(program string, bi *debug.BuildInfo, ldVersion, ldCommit, ldDate string) Info {
	in := Info{Program: program, Version: Devel, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			in.Version = v
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.time":
				in.CommitTime = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			case "GOOS":
				in.OS = s.Value
			case "GOARCH":
				in.Arch = s.Value
			}
		}
	}
	if ldVersion != "" {
		in.Version = ldVersion
		if in.Version[0] >= '0' && in.Version[0] <= '9' {
			in.Version = "v" + in.Version
		}
	}
	if ldCommit != "" {
		in.Commit = ldCommit
	}
	if ldDate != "" {
		in.CommitTime = ldDate
	}
	return in
}

// ShortCommit returns the first 7 characters of the commit, "" when it is
// unknown.
func (in Info) ShortCommit() string {
	if len(in.Commit) > 7 {
		return in.Commit[:7]
	}
	return in.Commit
}

// Date returns the day of the commit (2026-12-03), "" when unknown. A time
// that does not parse as RFC 3339 is returned as it is.
func (in Info) Date() string {
	if in.CommitTime == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339, in.CommitTime)
	if err != nil {
		return in.CommitTime
	}
	return t.UTC().Format("2006-01-02")
}

// String returns the one-line version: `warp v1.2.3 (commit abc1234,
// 2026-12-03, go1.26.8)`; a build from a modified tree says "commit
// abc1234, modified"; unknown parts are left out.
func (in Info) String() string {
	var parts []string
	if c := in.ShortCommit(); c != "" {
		c = "commit " + c
		if in.Modified {
			c += ", modified"
		}
		parts = append(parts, c)
	}
	if d := in.Date(); d != "" {
		parts = append(parts, d)
	}
	parts = append(parts, in.GoVersion)
	return fmt.Sprintf("%s %s (%s)", in.Program, in.Version, strings.Join(parts, ", "))
}
