package steps

import "testing"

func TestCompareVersionsIsNumeric(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"0.61.0", "0.9.0", 1}, {"2.1.332", "2.1.332", 0}, {"2.1.99", "2.1.332", -1}, {"1.0", "1.0.0", 0}, {"10.0.0", "9.99.99", 1},
	} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
