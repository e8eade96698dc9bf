package heartbeat

import "testing"

func TestSameServer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:7077", "http://127.0.0.1:7077/", true},
		{"", "http://127.0.0.1:7077", true},
		{"HTTP://Warp.Example:80/", "http://warp.example", true},
		{"https://warp.example", "https://warp.example:443", true},
		{"https://warp.example/base/", "https://warp.example/base", true},
		{"http://127.0.0.1:7077", "http://127.0.0.1:7078", false},
		{"http://warp.example", "https://warp.example", false},
		{"http://warp.example", "http://evil.example", false},
		{"http://warp.example/a", "http://warp.example/b", false},
		{"http://warp.example", "not a url", false},
		{"http://[::1", "http://[::1", false},
	} {
		if got := SameServer(c.a, c.b); got != c.want {
			t.Errorf("SameServer(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
