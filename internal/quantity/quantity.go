// Package quantity reads Kubernetes resource quantities ("8", "500m",
// "64Gi", "1e3") exactly, for the importers of Kubernetes objects (which
// import no k8s.io module).
package quantity

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Parse reads a Kubernetes resource quantity ("8", "500m",
// "64Gi", "1.5", "1e3", "100M") as an exact rational.
func Parse(s string) (*big.Rat, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty quantity")
	}
	num := s
	mult := big.NewRat(1, 1)
	suffixes := []struct {
		s string
		r *big.Rat
	}{
		{"Ki", pow(2, 10)}, {"Mi", pow(2, 20)}, {"Gi", pow(2, 30)}, {"Ti", pow(2, 40)}, {"Pi", pow(2, 50)}, {"Ei", pow(2, 60)},
		{"n", new(big.Rat).Inv(pow(10, 9))}, {"u", new(big.Rat).Inv(pow(10, 6))}, {"m", new(big.Rat).Inv(pow(10, 3))},
		{"k", pow(10, 3)}, {"M", pow(10, 6)}, {"G", pow(10, 9)}, {"T", pow(10, 12)}, {"P", pow(10, 15)}, {"E", pow(10, 18)},
	}
	suffixed := false
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf.s) {
			num, mult, suffixed = strings.TrimSuffix(s, suf.s), suf.r, true
			break
		}
	}
	if suffixed && strings.ContainsAny(num, "eE") {
		// Kubernetes takes a suffix or an exponent, not both ("1e3Ki").
		return nil, fmt.Errorf("bad quantity %q: an exponent and a suffix", s)
	}
	if num == "" || strings.ContainsAny(num, " _/") || strings.HasPrefix(num, "+-") {
		return nil, fmt.Errorf("bad quantity %q", s)
	}
	// big.Rat.SetString accepts "1.5", "1e3", "-2"; not "0x10" nor "1/2"
	// (both refused above or below).
	if strings.ContainsAny(num, "xXpP") {
		return nil, fmt.Errorf("bad quantity %q", s)
	}
	if e := strings.IndexAny(num, "eE"); e >= 0 {
		// Bound the exponent so that a hostile "1e999999999" cannot make
		// big.Rat allocate without end.
		var exp int
		if _, err := fmt.Sscanf(num[e+1:], "%d", &exp); err != nil || exp > 30 || exp < -30 {
			return nil, fmt.Errorf("bad quantity %q", s)
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, fmt.Errorf("bad quantity %q", s)
	}
	if r.Sign() < 0 {
		return nil, fmt.Errorf("negative quantity %q", s)
	}
	r.Mul(r, mult)
	if r.Cmp(pow(10, 24)) > 0 {
		return nil, fmt.Errorf("quantity %q is absurd", s)
	}
	return r, nil
}

func pow(b, e int64) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(b), big.NewInt(e), nil))
}

// Scaled returns r × num / den rounded down, and whether it was exact; a
// result beyond int64 is 1<<40 and inexact.
func Scaled(r *big.Rat, num, den int64) (int64, bool) {
	x := new(big.Rat).Mul(r, big.NewRat(num, den))
	q := new(big.Int).Quo(x.Num(), x.Denom())
	exact := new(big.Int).Mod(x.Num(), x.Denom()).Sign() == 0
	if !q.IsInt64() {
		return 1 << 40, false
	}
	return q.Int64(), exact
}
