package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxExpandedNames bounds how many names one pattern may expand to, so a
// typo like "h[0-999999999]" is an error instead of an out-of-memory.
const MaxExpandedNames = 1 << 20

// CountNames returns how many names ExpandNames would make of pattern,
// without making them: O(length of the pattern), whatever it expands to.
// More than MaxExpandedNames is reported as MaxExpandedNames+1, and a
// pattern ExpandNames rejects as 0.
func CountNames(pattern string) int { return countNames(pattern) }

// ExpandNames expands a host-list pattern into names, in order.
//
// A pattern is a comma-separated list of parts, as in Slurm host lists
// ("gb-r1-t[01-09],gb-r1-x17"). A part is literal text with zero or more
// bracket groups; each group is a comma-separated list of numbers and
// inclusive ranges, e.g. "dgx[0001-1250]", "r[1-2]-n[01-18]" (the last group
// varies fastest) or "gpu[1,3,5-7]". A range keeps the zero padding of its
// first bound. A part without brackets is one name. Names may not be empty
// or contain spaces or commas.
func ExpandNames(pattern string) ([]string, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty name")
	}
	if strings.ContainsAny(pattern, " \t\n\r") {
		return nil, fmt.Errorf("name %q contains white space", pattern)
	}
	parts := splitTopLevel(pattern)
	if len(parts) == 1 {
		return expandPart(pattern)
	}
	var out []string
	for _, part := range parts {
		if part == "" {
			return nil, fmt.Errorf("name list %q has an empty name", pattern)
		}
		names, err := expandPart(part)
		if err != nil {
			return nil, err
		}
		if len(out)+len(names) > MaxExpandedNames {
			return nil, fmt.Errorf("name list %q expands to more than %d names", pattern, MaxExpandedNames)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTopLevel splits a pattern at the commas outside brackets.
func splitTopLevel(p string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, p[start:])
}

// expandPart expands one part of a name list (no top-level commas).
func expandPart(pattern string) ([]string, error) {
	var groups [][]string
	total := 1
	lits, err := scanPart(pattern, func(body string) error {
		g, err := expandGroup(body)
		if err != nil {
			return fmt.Errorf("name pattern %q: %v", pattern, err)
		}
		groups = append(groups, g)
		// Check the product as groups come, so a pattern of many large
		// groups fails before they are all expanded.
		total *= len(g)
		if total > MaxExpandedNames {
			return fmt.Errorf("name pattern %q expands to more than %d names", pattern, MaxExpandedNames)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, total)
	idx := make([]int, len(groups))
	var b strings.Builder
	for {
		b.Reset()
		for i, g := range groups {
			b.WriteString(lits[i])
			b.WriteString(g[idx[i]])
		}
		b.WriteString(lits[len(lits)-1])
		out = append(out, b.String())
		// Odometer increment, last group fastest.
		i := len(groups) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(groups[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
	return out, nil
}

// scanPart splits one part of a name list (no top-level commas) into
// literal text and bracket groups, left to right: it calls group with the
// body of each bracket group in turn and returns the literal text around
// them (one more piece than groups). It stops at the first malformed
// bracket or the first error group returns.
func scanPart(pattern string, group func(body string) error) ([]string, error) {
	var lits []string
	rest := pattern
	for {
		open := strings.IndexByte(rest, '[')
		closeAt := strings.IndexByte(rest, ']')
		if open < 0 {
			if closeAt >= 0 {
				return nil, fmt.Errorf("name pattern %q: ']' without '['", pattern)
			}
			return append(lits, rest), nil
		}
		if closeAt < 0 {
			return nil, fmt.Errorf("name pattern %q: '[' without ']'", pattern)
		}
		if closeAt < open {
			return nil, fmt.Errorf("name pattern %q: ']' without '['", pattern)
		}
		lits = append(lits, rest[:open])
		body := rest[open+1 : closeAt]
		if strings.IndexByte(body, '[') >= 0 {
			return nil, fmt.Errorf("name pattern %q: nested '['", pattern)
		}
		if err := group(body); err != nil {
			return nil, err
		}
		rest = rest[closeAt+1:]
	}
}

func expandGroup(body string) ([]string, error) {
	if body == "" {
		return nil, fmt.Errorf("empty []")
	}
	var out []string
	err := eachRange(body, func(part, lo string, a, b int) error {
		if b-a >= MaxExpandedNames || len(out)+(b-a+1) > MaxExpandedNames {
			return fmt.Errorf("range %q is larger than %d", part, MaxExpandedNames)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for v := a; v <= b; v++ {
			s := strconv.Itoa(v)
			for len(s) < width {
				s = "0" + s
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachRange calls f with each comma-separated entry of a bracket group's
// body, a number or an inclusive range "lo-hi", as its text, the text of
// its first bound and its bounds a ≤ b. It stops at the first malformed
// entry or the first error f returns.
func eachRange(body string, f func(part, lo string, a, b int) error) error {
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err := parseBound(lo)
		if err != nil {
			return err
		}
		b, err := parseBound(hi)
		if err != nil {
			return err
		}
		if b < a {
			return fmt.Errorf("range %q goes backwards", part)
		}
		if err := f(part, lo, a, b); err != nil {
			return err
		}
	}
	return nil
}

func parseBound(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty number in range")
	}
	if len(s) > 9 {
		return 0, fmt.Errorf("number %q too long", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}
