package app_test

import (
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// TestParseSize: import's --max-size reads bytes and the binary units,
// K, KB and KiB alike, and refuses (as a usage error) what is no size, no
// more than zero, or more than an int64 holds once multiplied.
func TestParseSize(t *testing.T) {
	for text, want := range map[string]int64{"512": 512, "4GiB": 4 << 30, "8 MiB": 8 << 20, "3K": 3 << 10, "3KB": 3 << 10, "7B": 7, " 2G ": 2 << 30} {
		if got, err := app.ParseSize(text); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"", "0", "-1MiB", "lots", "1.5GiB", "4TiB", "9999999999GiB"} {
		got, err := app.ParseSize(text)
		if err == nil || app.ExitCode(err) != app.ExitUsage {
			t.Errorf("ParseSize(%q) = %d, %v; want a usage error", text, got, err)
		}
	}
}
