package nvml

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// MaxCPUs bounds the CPU numbers this package reads from cpulists and
// affinity masks.
const MaxCPUs = 1 << 16

// FormatCPUList writes a CPU bit mask (word i holds CPUs i×W .. i×W+W-1,
// W the width of uint, as NVML's affinity calls return it) as a Linux
// cpulist such as "0-55,112-167". An empty mask gives "".
func FormatCPUList(mask []uint) string {
	var b strings.Builder
	start, prev := -1, -1
	flush := func() {
		if start < 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(start))
		if prev > start {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(prev))
		}
	}
	for w, word := range mask {
		for word != 0 {
			bit := bits.TrailingZeros(word)
			word &^= 1 << uint(bit)
			cpu := w*bits.UintSize + bit
			if cpu == prev+1 && start >= 0 {
				prev = cpu
				continue
			}
			flush()
			start, prev = cpu, cpu
		}
	}
	flush()
	return b.String()
}

// ParseCPUList parses a Linux cpulist ("0-3,8,10-11"; white space around
// it is ignored) and returns the CPU numbers in ascending order without
// duplicates. The empty list is valid.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("cpulist %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("cpulist %q: %v", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpulist %q: range %q goes backwards", s, part)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func cpuNumber(s string) (int, error) {
	if s == "" || len(s) > 6 {
		return 0, fmt.Errorf("bad CPU number %q", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad CPU number %q", s)
		}
	}
	n, _ := strconv.Atoi(s)
	if n >= MaxCPUs {
		return 0, fmt.Errorf("CPU number %d beyond %d", n, MaxCPUs-1)
	}
	return n, nil
}

// cpuMask turns CPU numbers into a mask as FormatCPUList reads it.
func cpuMask(cpus []int) []uint {
	var mask []uint
	for _, c := range cpus {
		w := c / bits.UintSize
		for len(mask) <= w {
			mask = append(mask, 0)
		}
		mask[w] |= 1 << uint(c%bits.UintSize)
	}
	return mask
}
