package warpcli

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"./warp.db", "./warp.db"},
		{"postgres://warp:s3cret@db:5432/warp?sslmode=require", "postgres://warp:xxxxx@db:5432/warp?sslmode=require"},
		{"postgres://warp@db/warp?password=s3cret&sslmode=disable", "postgres://warp@db/warp?password=xxxxx&sslmode=disable"},
		{"host=db user=warp password=s3cret dbname=warp", "host=db user=warp password=xxxxx dbname=warp"},
	}
	for _, c := range cases {
		got := redactDSN(c.in)
		if got != c.want {
			t.Errorf("redactDSN(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("redactDSN(%q) leaks the password: %q", c.in, got)
		}
	}
}
