package age_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/age"
)

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 999 * time.Millisecond: "0s", 45 * time.Second: "45s", time.Minute: "1m00s",
		3*time.Minute + 12*time.Second + 900*time.Millisecond: "3m12s", 30 * time.Minute: "30m00s",
		time.Hour: "1h00m", 5*time.Hour + 7*time.Minute + 59*time.Second: "5h07m", 12 * time.Hour: "12h00m",
		24 * time.Hour: "1d00h", 3*24*time.Hour + 4*time.Hour + 59*time.Minute: "3d04h", 400 * 24 * time.Hour: "400d00h",
		-90 * time.Second: "-1m30s",
	} {
		if got := age.Format(d); got != want {
			t.Errorf("Format(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "-"}, {now, "0s ago"}, {now.Add(-4 * time.Minute), "4m00s ago"}, {now.Add(90 * time.Second), "in 1m30s"},
	} {
		if got := age.Ago(now, c.t); got != c.want {
			t.Errorf("Ago(%s) = %q, want %q", c.t, got, c.want)
		}
	}
}
