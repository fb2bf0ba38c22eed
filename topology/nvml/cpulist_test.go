package nvml

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		list string
		cpus []int
	}{
		{"", nil},
		{"0", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-1,63-65,127", []int{0, 1, 63, 64, 65, 127}},
	} {
		got, err := ParseCPUList(tc.list)
		if err != nil || !reflect.DeepEqual(got, tc.cpus) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tc.list, got, err)
		}
		if s := FormatCPUList(cpuMask(tc.cpus)); s != tc.list {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.cpus, s, tc.list)
		}
	}
	if got, _ := ParseCPUList(" 3,1-2,2\n"); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("unsorted, overlapping: %v", got)
	}
	for _, bad := range []string{"a", "1-", "-1", "3-1", "1,,2", "99999999", "65536"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestCPUListRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cpus := rapid.SliceOfDistinct(rapid.IntRange(0, 1023), rapid.ID[int]).Draw(t, "cpus")
		slices.Sort(cpus)
		list := FormatCPUList(cpuMask(cpus))
		got, err := ParseCPUList(list)
		if err != nil {
			t.Fatal(err)
		}
		if len(cpus) == 0 {
			cpus = nil
		}
		if !reflect.DeepEqual(got, cpus) {
			t.Fatalf("%v → %q → %v", cpus, list, got)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-55,112-167", "", "1", "0-", ",", "4294967296"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		// What parses formats back to a list that parses to the same CPUs.
		again, err := ParseCPUList(FormatCPUList(cpuMask(cpus)))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("%q: %v then %v (%v)", s, cpus, again, err)
		}
		if strings.Contains(s, "\x00") && len(cpus) > 0 {
			t.Fatalf("%q: NUL accepted", s)
		}
	})
}
