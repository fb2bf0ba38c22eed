package devname

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCompareCases(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"gpu-2", "gpu-10", -1}, {"gpu-10", "gpu-2", 1}, {"gpu-10", "gpu-10", 0},
		{"gpu-1-mig-1g18gb-19-4", "gpu-10-mig-1g18gb-19-0", -1}, {"gpu-3-mig-1g18gb-19-4", "gpu-3-mig-1g18gb-19-10", -1},
		{"gpu-02", "gpu-2", 1}, {"a", "b", -1}, {"gpu", "gpu-0", -1}, {"channel-9", "channel-100", -1},
		{"gpu-99999999999999999999999", "gpu-100000000000000000000000", -1},
	} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCompareOrder: an order (antisymmetric, transitive, 0
// only for equal names) against a naive oracle on GPU and MIG names.
func TestCompareOrder(t *testing.T) {
	var names []string
	for _, g := range []string{"0", "1", "2", "9", "10", "11", "15", "100", "02"} {
		names = append(names, "gpu-"+g, "gpu-"+g+"-mig-1g18gb-19-4", "gpu-"+g+"-mig-1g18gb-19-10", "card"+g)
	}
	// The oracle: the number after gpu-/card, then the rest.
	num := func(s string) (string, int, string) {
		p := s[:strings.IndexAny(s, "0123456789")]
		rest := s[len(p):]
		k := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if k < 0 {
			k = len(rest)
		}
		n, _ := strconv.Atoi(rest[:k])
		return p, n, rest[k:]
	}
	for _, a := range names {
		for _, b := range names {
			c := Compare(a, b)
			if c != -Compare(b, a) || (c == 0) != (a == b) {
				t.Errorf("%q vs %q: %d, reversed %d", a, b, c, Compare(b, a))
			}
			pa, na, ra := num(a)
			pb, nb, rb := num(b)
			if pa == pb && na != nb && (c < 0) != (na < nb) {
				t.Errorf("%q vs %q: %d, but %d vs %d", a, b, c, na, nb)
			}
			if pa == pb && na == nb && ra != rb && strings.HasSuffix(ra, "-4") && strings.HasSuffix(rb, "-10") && c > 0 {
				t.Errorf("%q after %q", a, b)
			}
		}
	}
	s := slices.Clone(names)
	slices.SortFunc(s, Compare)
	for i := 1; i < len(s); i++ {
		for j := i; j < len(s); j++ {
			if Compare(s[i-1], s[j]) > 0 {
				t.Errorf("not transitive: %q sorted before %q", s[i-1], s[j])
			}
		}
	}
}
