package topology

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder maps a yaml.v3 node tree onto a Spec, strictly: unknown and
// duplicate keys are errors, and so are values of the wrong type. It walks
// the Spec's types by reflection, so new Spec fields need no code here.
type decoder struct {
	doc *document
	// budget is how many more nodes may be visited; aliases can make a
	// small document expand enormously ("billion laughs").
	budget int
	fields map[reflect.Type][]field
}

// field is one serialisable field of a struct.
type field struct {
	name  string
	index int
}

func (d *decoder) decode(root *yaml.Node, s *Spec) error {
	return d.value(root, reflect.ValueOf(s).Elem(), &pathSeg{}, 0)
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, p *pathSeg, depth int) error {
	n = deref(n)
	d.budget--
	if d.budget < 0 {
		return d.doc.errAt(n, p.String(), "too many values after expanding aliases")
	}
	if depth > maxFileDepth {
		return d.doc.errAt(n, p.String(), "nested more than %d levels deep", maxFileDepth)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.SetZero()
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.mapping(n, v, p, depth)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.doc.errAt(n, p.String(), "want a list, got %s", describe(n))
		}
		if len(n.Content) == 0 {
			v.SetZero()
			return nil
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.value(c, s.Index(i), p.index(i), depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if err := d.value(n, e.Elem(), p, depth); err != nil {
			return err
		}
		v.Set(e)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.doc.errAt(n, p.String(), "want %s, got %s", wantOf(v.Kind()), describe(n))
	}
	if isInt(v.Kind()) && n.ShortTag() != "!!int" {
		// yaml.v3 would truncate 1.5 to 1.
		if msg, ok := outOfRange(n, v.Type()); ok {
			return d.doc.errAt(n, p.String(), "%s", msg)
		}
		return d.doc.errAt(n, p.String(), "want %s, got %s", wantOf(v.Kind()), describe(n))
	}
	if fastScalar(n, v) {
		return nil
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		if msg, ok := outOfRange(n, v.Type()); ok {
			return d.doc.errAt(n, p.String(), "%s", msg)
		}
		return d.doc.errAt(n, p.String(), "want %s, got %s", wantOf(v.Kind()), describe(n))
	}
	return nil
}

// outOfRange explains why a well-formed number does not fit a field of
// type t: an integer beyond the range of its integer type (a negative one
// for an unsigned type), or a number beyond the range of its float type.
// It reports false for values that are not such numbers (strings, quoted
// or explicitly tagged scalars, fractions for integer fields), which get
// the usual "want …, got …" message.
func outOfRange(n *yaml.Node, t reflect.Type) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "", false
	}
	// yaml.v3 tags an integer too large for int64 and uint64 as a float,
	// and a float beyond float64 as a string.
	switch n.ShortTag() {
	case "!!int", "!!float", "!!str":
	default:
		return "", false
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	switch k := t.Kind(); {
	case isInt(k):
		if !isIntegerLiteral(n.Value) {
			return "", false
		}
		var lo, hi string
		if k >= reflect.Uint {
			lo, hi = "0", strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10)
		} else {
			max := int64(math.MaxInt64 >> (64 - t.Bits()))
			lo, hi = strconv.FormatInt(-max-1, 10), strconv.FormatInt(max, 10)
		}
		return fmt.Sprintf("%s is out of range for this field: want an integer from %s to %s", v, lo, hi), true
	case k == reflect.Float64 || k == reflect.Float32:
		_, err := strconv.ParseFloat(n.Value, t.Bits())
		if !errors.Is(err, strconv.ErrRange) {
			return "", false
		}
		return fmt.Sprintf("%s is out of range for this field: want a number of magnitude at most %g", v, maxFloat(t.Bits())), true
	}
	return "", false
}

// isIntegerLiteral reports whether s is a YAML or JSON integer of any
// size: an optional sign, then decimal digits or 0x, 0o or 0b and digits
// of that base, with underscores allowed between digits.
func isIntegerLiteral(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			s, digit = s[2:], func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
		case 'o', 'O':
			s, digit = s[2:], func(c byte) bool { return c >= '0' && c <= '7' }
		case 'b', 'B':
			s, digit = s[2:], func(c byte) bool { return c == '0' || c == '1' }
		}
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch {
		case digit(s[i]):
			n++
		case s[i] == '_' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return n > 0
}

func maxFloat(bits int) float64 {
	if bits == 32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// fastScalar sets v from the common forms of scalars (any string but
// !!binary, decimal integers, plain numbers) without yaml.v3's reflection,
// and reports whether it did; the caller falls back to Node.Decode.
func fastScalar(n *yaml.Node, v reflect.Value) bool {
	switch k := v.Kind(); {
	case k == reflect.String:
		if n.Tag == "!!binary" || n.Tag == "tag:yaml.org,2002:binary" {
			return false
		}
		v.SetString(n.Value)
		return true
	case k >= reflect.Int && k <= reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 10, v.Type().Bits())
		if err != nil {
			return false
		}
		v.SetInt(i)
		return true
	case k >= reflect.Uint && k <= reflect.Uint64:
		u, err := strconv.ParseUint(n.Value, 10, v.Type().Bits())
		if err != nil {
			return false
		}
		v.SetUint(u)
		return true
	case k == reflect.Float64 && (n.Tag == "!!int" || n.Tag == "!!float"):
		if strings.ContainsAny(n.Value, "xXpP_") {
			return false
		}
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return false
		}
		v.SetFloat(f)
		return true
	}
	return false
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

func wantOf(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return k.String()
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, p *pathSeg, depth int) error {
	fields := d.fieldsOf(v.Type())
	if n.Kind != yaml.MappingNode {
		return d.doc.errAt(n, p.String(), "want a mapping with keys %s, got %s", fieldList(fields), describe(n))
	}
	seen := make([]*yaml.Node, len(fields))
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return d.doc.errAt(k, p.String(), "a key must be a name, not %s", describe(k))
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		fi, err := d.field(fields, k, p)
		if err != nil {
			return err
		}
		if first := seen[fi]; first != nil {
			return d.doc.errAt(k, p.key(k.Value).String(), "duplicate key %q (first at line %d)", k.Value, first.Line)
		}
		seen[fi] = k
		if err := d.value(val, v.Field(fields[fi].index), p.key(fields[fi].name), depth+1); err != nil {
			return err
		}
	}
	// Merge keys ("<<: *anchor"): keys the mapping does not set itself.
	for _, m := range merges {
		m = deref(m)
		ok := m.Kind == yaml.MappingNode
		if m.Kind == yaml.SequenceNode {
			ok = true
			for _, c := range m.Content {
				ok = ok && deref(c).Kind == yaml.MappingNode
			}
		}
		if !ok {
			return d.doc.errAt(m, p.String(), "\"<<\" merges a mapping or a list of mappings, not %s", describe(m))
		}
		err := eachPair(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!merge", Value: "<<"}, m}},
			0, &d.budget, func(k, val *yaml.Node) error {
				k = deref(k)
				if k.Kind != yaml.ScalarNode {
					return d.doc.errAt(k, p.String(), "a key must be a name, not %s", describe(k))
				}
				fi, err := d.field(fields, k, p)
				if err != nil {
					return err
				}
				if seen[fi] != nil {
					return nil
				}
				seen[fi] = k
				return d.value(val, v.Field(fields[fi].index), p.key(fields[fi].name), depth+1)
			})
		if err == errMergeBudget {
			return d.doc.errAt(m, p.String(), "too many merged mappings")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// field finds the field a key names, or returns an unknown-field error
// with a suggestion.
func (d *decoder) field(fields []field, k *yaml.Node, p *pathSeg) (int, error) {
	for i := range fields {
		if fields[i].name == k.Value {
			return i, nil
		}
	}
	best, bestDist := "", 3
	for _, f := range fields {
		if strings.EqualFold(f.name, k.Value) {
			best = f.name
			break
		}
		if dist := editDistance(f.name, k.Value, bestDist); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	hint := " (known keys: " + fieldList(fields) + ")"
	if best != "" {
		hint = fmt.Sprintf("; did you mean %q?", best)
	}
	return 0, d.doc.errAt(k, p.key(k.Value).String(), "unknown field %q%s", k.Value, hint)
}

func fieldList(fields []field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit (or the strings are long).
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// fieldsOf lists the fields of a struct type by their yaml tags.
func (d *decoder) fieldsOf(t reflect.Type) []field {
	if fs, ok := d.fields[t]; ok {
		return fs
	}
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		fs = append(fs, field{name: name, index: i})
	}
	d.fields[t] = fs
	return fs
}

// pathSeg is a field path under construction, as a linked list from the
// leaf up, so the decoder builds path strings only for errors.
type pathSeg struct {
	parent *pathSeg
	name   string
	idx    int
	isIdx  bool
}

func (p *pathSeg) key(k string) *pathSeg { return &pathSeg{parent: p, name: k} }

func (p *pathSeg) index(i int) *pathSeg { return &pathSeg{parent: p, idx: i, isIdx: true} }

// String returns the path in SpecError notation: "hosts[2].name".
func (p *pathSeg) String() string {
	var segs []*pathSeg
	for q := p; q != nil && (q.parent != nil); q = q.parent {
		segs = append(segs, q)
	}
	var b strings.Builder
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s.isIdx {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}
