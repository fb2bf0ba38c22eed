package slurm

import (
	"bufio"
	"bytes"
	"strings"
)

// MaxFileBytes bounds a configuration file the importer reads.
const MaxFileBytes = 16 << 20

// pair is one Key=Value of a configuration line. Key keeps its spelling;
// compare it with strings.EqualFold (Slurm's keys are case-insensitive).
type pair struct {
	Key, Value string
}

// line is one logical line of a Slurm configuration file (continuations
// joined), split into pairs.
type line struct {
	No    int // the 1-based number of its first physical line
	Pairs []pair
}

// get returns the value of the first pair named key (any case).
func (l line) get(key string) (string, bool) {
	for _, p := range l.Pairs {
		if strings.EqualFold(p.Key, key) {
			return p.Value, true
		}
	}
	return "", false
}

// lexLines splits Slurm's key=value syntax: '#' starts a comment (unless
// escaped as \#), a trailing '\' joins the next line on (no space added), values may be double
// quoted, pairs are separated by white space. A word without '=' is a pair
// with an empty Value and Key the word (Include lines, BlockSizes on its own
// are handled by the callers). Errors name file and line.
func lexLines(data []byte, file string) ([]line, error) {
	if len(data) > MaxFileBytes {
		return nil, errAt(file, 0, "", "file is larger than %d bytes", MaxFileBytes)
	}
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxFileBytes+1)
	var cur strings.Builder
	start, no := 0, 0
	for sc.Scan() {
		no++
		text := strings.TrimRight(sc.Text(), "\r")
		if cur.Len() == 0 {
			start = no
		}
		text = stripComment(text)
		if strings.HasSuffix(text, "\\") {
			cur.WriteString(strings.TrimSuffix(text, "\\"))
			continue
		}
		cur.WriteString(text)
		l, err := splitPairs(cur.String(), file, start)
		cur.Reset()
		if err != nil {
			return nil, err
		}
		if len(l.Pairs) > 0 {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errAt(file, no+1, "", "%v", err)
	}
	if cur.Len() > 0 {
		l, err := splitPairs(cur.String(), file, start)
		if err != nil {
			return nil, err
		}
		if len(l.Pairs) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && (i == 0 || s[i-1] != '\\') {
			return s[:i]
		}
	}
	return strings.ReplaceAll(s, "\\#", "#")
}

func splitPairs(s, file string, no int) (line, error) {
	l := line{No: no}
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return l, nil
		}
		j := i
		for j < len(s) && s[j] != '=' && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		key := s[i:j]
		if j >= len(s) || s[j] != '=' {
			l.Pairs = append(l.Pairs, pair{Key: key})
			i = j
			continue
		}
		if key == "" {
			return l, errAt(file, no, "", "a value without a key (%q)", clip(s[i:]))
		}
		j++ // '='
		var val strings.Builder
		quoted := false
		for j < len(s) {
			c := s[j]
			if c == '"' {
				quoted = !quoted
				j++
				continue
			}
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			val.WriteByte(c)
			j++
		}
		if quoted {
			return l, errAt(file, no, key, "unterminated quote")
		}
		l.Pairs = append(l.Pairs, pair{Key: key, Value: val.String()})
		i = j
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
