package version

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStringFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/gyrum-labs/warp", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc1234def567890"},
			{Key: "vcs.time", Value: "2026-12-03T22:10:00Z"},
			{Key: "vcs.modified", Value: "false"},
			{Key: "GOOS", Value: "darwin"},
			{Key: "GOARCH", Value: "arm64"},
		},
	}
	in := fromBuildInfo("warp", bi, "", "", "")
	if got, want := in.String(), "warp v1.2.3 (commit abc1234, 2026-12-03, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if in.OS != "darwin" || in.Arch != "arm64" || in.Commit != "abc1234def567890" {
		t.Errorf("info = %+v", in)
	}

	bi.Settings[2].Value = "true"
	if got, want := fromBuildInfo("gyrum", bi, "", "", "").String(), "gyrum v1.2.3 (commit abc1234, modified, 2026-12-03, go1.26.8)"; got != want {
		t.Errorf("modified: String() = %q, want %q", got, want)
	}
}

func TestUnknownVersionIsDevel(t *testing.T) {
	for _, bi := range []*debug.BuildInfo{nil, {Main: debug.Module{Version: ""}}, {Main: debug.Module{Version: Devel}}} {
		in := fromBuildInfo("gyrum", bi, "", "", "")
		if got, want := in.String(), "gyrum (devel) ("+runtime.Version()+")"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// The linker's -X values (release builds) win over the build info, and a
// version without its v gets one.
func TestLinkerOverrides(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}}
	in := fromBuildInfo("warp", bi, "1.4.0", "0123456789abcdef", "2026-12-24T08:00:00Z")
	if got, want := in.String(), "warp v1.4.0 (commit 0123456, 2026-12-24, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"program":"warp"`, `"version":"v1.4.0"`, `"commit":"0123456789abcdef"`, `"commit_time":"2026-12-24T08:00:00Z"`, `"go":"go1.26.8"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}

// The test binary itself has build info: Get reads it.
func TestGetReadsThisBinary(t *testing.T) {
	in := Get("warp")
	if in.Program != "warp" || in.Version == "" || !strings.HasPrefix(in.GoVersion, "go") || in.OS != runtime.GOOS {
		t.Errorf("Get = %+v", in)
	}
}
