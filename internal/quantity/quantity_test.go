package quantity

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// TestParse: values as Kubernetes' resource.ParseQuantity (apimachinery
// v0.37.2) reads them, and inputs it refuses.
func TestParse(t *testing.T) {
	for s, want := range map[string]string{
		"8": "8", "500m": "1/2", "0.5": "1/2", ".5": "1/2", "5.": "5", "+5": "5", "-0": "0",
		"1.5Gi": "1610612736", "64Gi": "68719476736", "1Ki": "1024", "100M": "100000000",
		"1e3": "1000", "1E3": "1000", "1e+3": "1000", "1e-3": "1/1000", "1e03": "1000", "01": "1",
		"1.5m": "3/2000", "1E": "1000000000000000000", "2k": "2000", "3n": "3/1000000000",
	} {
		r, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if r.RatString() != want {
			t.Errorf("Parse(%q) = %s, want %s", s, r.RatString(), want)
		}
	}
	for _, s := range []string{"", "1i", "0x10", "1e3Ki", "1e3m", "1e3E", "1.2.3", "-1", "1/2", "1 0", "1_000", "+-1", "1e99", "1e-99", "Gi", "1e", "2E30"} {
		if r, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", s, r.RatString())
		}
	}
}

func TestScaled(t *testing.T) {
	r, _ := Parse("1500m")
	if v, exact := Scaled(r, 1000, 1); v != 1500 || !exact {
		t.Errorf("1500m in milli: %d %v", v, exact)
	}
	if v, exact := Scaled(r, 1, 1); v != 1 || exact {
		t.Errorf("1500m whole: %d %v, want 1 inexact", v, exact)
	}
	big, _ := Parse("1E")
	if v, exact := Scaled(big, 1000, 1); v != 1<<40 || exact {
		t.Errorf("1E in milli: %d %v, want the overflow value", v, exact)
	}
}

// FuzzParse: any input is read or refused, never a panic; what is read is
// exact, non-negative and bounded, and reads again the same from its
// decimal form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"8", "500m", "1.5Gi", "1e3", "1e-3", "0x10", "1e99", " 7 ", "+5", "1E", "1e3Ki"} {
		f.Add(s)
	}
	limit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil))
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if r != nil {
				t.Fatalf("Parse(%q): a value with an error", s)
			}
			return
		}
		if r.Sign() < 0 || r.Cmp(limit) > 0 {
			t.Fatalf("Parse(%q) = %s: out of range", s, r.RatString())
		}
		if !r.IsInt() {
			return
		}
		again, err := Parse(r.RatString())
		if err != nil || again.Cmp(r) != 0 {
			t.Fatalf("Parse(%q) = %s, which reads back as %v (%v)", s, r.RatString(), again, err)
		}
		if strings.TrimSpace(s) != s {
			return
		}
		if r2, err := Parse(s); err != nil || r2.Cmp(r) != 0 {
			t.Fatalf("Parse(%q) not deterministic", s)
		}
	})
}

func ExampleParse() {
	r, _ := Parse("1.5Gi")
	gib, _ := Scaled(r, 1, 1<<20)
	fmt.Println(r.RatString(), "bytes =", gib, "MiB")
	_, err := Parse("1e3Ki")
	fmt.Println(err)
	// Output:
	// 1610612736 bytes = 1536 MiB
	// bad quantity "1e3Ki": an exponent and a suffix
}
