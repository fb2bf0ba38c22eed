package topology

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Marshal returns s as a cluster file in the given format (FormatAuto
// means YAML). Keys come in the order of the Spec's fields, empty optional
// fields are left out, lists of numbers are written on one line and so are
// small parts of PCIe trees. It fails only for values a file cannot hold: a
// NaN or infinite bandwidth, or (in JSON) a string that is not valid UTF-8;
// YAML keeps such a string exactly, as !!binary.
func Marshal(s Spec, format Format) ([]byte, error) {
	n, err := encodeValue(reflect.ValueOf(s), format, &pathSeg{})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	switch format {
	case FormatJSON:
		writeJSON(&buf, n, 0)
		buf.WriteByte('\n')
	default:
		flowSmall(n, 0)
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return nil, fmt.Errorf("topology: encoding spec: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("topology: encoding spec: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// encodeValue turns a Spec (or part of one) into a node tree by its yaml
// tags: the mirror image of decoder. It sets every scalar's tag and picks
// quoting itself rather than leave it to yaml.v3, whose literal block style
// does not round-trip strings such as "\nx".
func encodeValue(v reflect.Value, format Format, p *pathSeg) (*yaml.Node, error) {
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if name == "-" || !sf.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(sf.Name)
			}
			fv := v.Field(i)
			if opts == "omitempty" && isEmpty(fv) {
				continue
			}
			c, err := encodeValue(fv, format, p.key(name))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, c)
		}
		return n, nil
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		scalars := true
		for i := 0; i < v.Len(); i++ {
			c, err := encodeValue(v.Index(i), format, p.index(i))
			if err != nil {
				return nil, err
			}
			scalars = scalars && c.Kind == yaml.ScalarNode
			n.Content = append(n.Content, c)
		}
		if scalars {
			n.Style = yaml.FlowStyle // "gpus: [0, 1]", and "[]"
		}
		return n, nil
	case reflect.Pointer:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
		return encodeValue(v.Elem(), format, p)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(v.Uint(), 10)}, nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &SpecError{Path: p.String(), Msg: fmt.Sprintf("cannot write %v to a cluster file", f)}
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		tag := "!!float"
		if !strings.ContainsAny(s, ".eE") {
			tag = "!!int" // "450", not "!!float 450"; it decodes into a float all the same
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}, nil
	case reflect.String:
		s := v.String()
		if !utf8.ValidString(s) {
			if format == FormatJSON {
				return nil, &SpecError{Path: p.String(), Msg: "string is not valid UTF-8; JSON cannot hold it"}
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!binary", Value: base64.StdEncoding.EncodeToString([]byte(s))}, nil
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
		if needsDoubleQuotes(s) {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n, nil
	}
	return nil, &SpecError{Path: p.String(), Msg: "topology: cannot encode " + v.Type().String()}
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return v.Len() == 0
	}
	return v.IsZero()
}

// needsDoubleQuotes reports strings that YAML's other styles may mangle:
// empty, with line breaks or other control characters, or with white space
// at either end. The encoder quotes other strings where plain style would
// read as something else ("yes", "1.5", "&a").
func needsDoubleQuotes(s string) bool {
	if s == "" {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return true
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && !unicode.IsPrint(r) && r != ' ' {
			return true
		}
	}
	return false
}

// flowSmall writes small parts of a template's PCIe tree on one line
// ("- switches: [{gpus: [0]}]"): nodes at least minFlowDepth below the top
// whose one-line form is short. depth counts mappings and lists from the
// top-level mapping (0); a NUMA node's pcie list is at depth 5.
func flowSmall(n *yaml.Node, depth int) {
	const minFlowDepth = 5
	if depth >= minFlowDepth && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) {
		var b bytes.Buffer
		if writeJSONInline(&b, n) {
			setFlow(n)
			return
		}
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue
		}
		flowSmall(c, depth+1)
	}
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		setFlow(c)
	}
}
