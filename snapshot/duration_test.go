package snapshot

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour:                    "1h",
		90 * time.Minute:             "1h30m",
		45 * time.Second:             "45s",
		time.Hour + time.Second:      "1h0m1s",
		time.Hour + time.Second/2:    "1h0m0.5s",
		0:                            "0s",
		26*time.Hour + 5*time.Minute: "26h5m",
	} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("%q does not parse back to %v: %v, %v", got, d, back, err)
		}
	}
}
