package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// JSON cluster files are read with encoding/json, which is strict (no
// comments, no trailing commas, no YAML syntax), and turned into the same
// yaml.v3 node tree as YAML files, with line and column set on every node,
// so that one decoder and one error locator serve both formats.

// parseJSON parses one JSON object into a node tree.
func (d *document) parseJSON(data []byte) (*yaml.Node, error) {
	base := 0
	if bytes.HasPrefix(data, utf8BOM) {
		base = len(utf8BOM)
	}
	body := data[base:]
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, d.errAtLine(1, 1, "", "empty cluster file")
	}
	if !json.Valid(body) {
		off, msg := len(body), "invalid JSON"
		var raw json.RawMessage
		var se *json.SyntaxError
		if err := json.Unmarshal(body, &raw); errors.As(err, &se) {
			// Offset counts the bytes read up to and including the bad one.
			off, msg = int(se.Offset)-1, "invalid JSON: "+se.Error()
		}
		line, col := lineCol(data, base+min(max(off, 0), len(body)))
		return nil, d.errAtLine(line, col, "", msg)
	}
	p := &jsonParser{doc: d, data: data, base: base, dec: json.NewDecoder(bytes.NewReader(body))}
	p.dec.UseNumber()
	p.pos = position{off: 0, line: 1, col: 1}
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, d.errAt(root, "", "the cluster file must be a JSON object ({\"version\": 1, …}), not %s", describe(root))
	}
	return root, nil
}

type position struct{ off, line, col int }

type jsonParser struct {
	doc  *document
	data []byte // the whole file
	base int    // where the JSON text starts in data (after a BOM)
	dec  *json.Decoder
	pos  position // a position at or before the next token, moved forward only
}

// next moves pos to the start of the next token and returns its line and
// column. It walks forward only, so the whole parse is linear.
func (p *jsonParser) next() (line, col int) {
	target := p.base + int(p.dec.InputOffset())
	for target < len(p.data) {
		c := p.data[target]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' && c != ':' {
			break
		}
		target++
	}
	for p.pos.off < target {
		r, size := utf8.DecodeRune(p.data[p.pos.off:])
		p.pos.off += size
		if r == '\n' {
			p.pos.line++
			p.pos.col = 1
		} else {
			p.pos.col++
		}
	}
	return p.pos.line, p.pos.col
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	line, col := p.next()
	if depth > maxFileDepth {
		return nil, p.doc.errAtLine(line, col, "", "JSON nested too deeply")
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.doc.errAtLine(line, col, "", "invalid JSON: "+err.Error())
	}
	n := &yaml.Node{Line: line, Column: col}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
			for p.dec.More() {
				kl, kc := p.next()
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.doc.errAtLine(kl, kc, "", "invalid JSON: "+err.Error())
				}
				key, _ := kt.(string)
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: key, Line: kl, Column: kc}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, k, v)
			}
		case '[':
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, p.doc.errAtLine(line, col, "", "invalid JSON: "+err.Error())
		}
	case string:
		n.Kind, n.Tag, n.Style, n.Value = yaml.ScalarNode, "!!str", yaml.DoubleQuotedStyle, t
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!int", string(t)
		if strings.ContainsAny(string(t), ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", "false"
		if t {
			n.Value = "true"
		}
	case nil:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	}
	return n, nil
}

// writeJSON writes the node tree that yaml.v3 made of a Spec as indented
// JSON, with lists of scalars on one line.
func writeJSON(b *bytes.Buffer, n *yaml.Node, indent int) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			writeJSON(b, n.Content[0], indent)
		}
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			b.WriteString("{}")
			return
		}
		if indent > 0 && writeJSONInline(b, n) {
			return
		}
		b.WriteString("{\n")
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(",\n")
			}
			writeIndent(b, indent+2)
			writeJSONString(b, n.Content[i].Value)
			b.WriteString(": ")
			writeJSON(b, n.Content[i+1], indent+2)
		}
		b.WriteByte('\n')
		writeIndent(b, indent)
		b.WriteByte('}')
	case yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
			b.WriteByte('[')
			for i, c := range n.Content {
				if i > 0 {
					b.WriteString(", ")
				}
				writeJSON(b, c, indent)
			}
			b.WriteByte(']')
			return
		}
		if writeJSONInline(b, n) {
			return
		}
		b.WriteString("[\n")
		for i, c := range n.Content {
			if i > 0 {
				b.WriteString(",\n")
			}
			writeIndent(b, indent+2)
			writeJSON(b, c, indent+2)
		}
		b.WriteByte('\n')
		writeIndent(b, indent)
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float", "!!bool":
			b.WriteString(n.Value)
		case "!!null":
			b.WriteString("null")
		default:
			writeJSONString(b, n.Value)
		}
	}
}

// writeJSONInline writes a small mapping or list on one line
// ({"switches": [{"gpus": [0]}]}) and reports whether it did.
func writeJSONInline(b *bytes.Buffer, n *yaml.Node) bool {
	const maxInline = 72
	start := b.Len()
	if !writeJSONLine(b, n, start+maxInline) {
		b.Truncate(start)
		return false
	}
	return true
}

// writeJSONLine writes n on one line; it gives up (returning false) once
// the buffer grows past limit.
func writeJSONLine(b *bytes.Buffer, n *yaml.Node, limit int) bool {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, n.Content[i].Value)
			b.WriteString(": ")
			if !writeJSONLine(b, n.Content[i+1], limit) {
				return false
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteString(", ")
			}
			if !writeJSONLine(b, c, limit) {
				return false
			}
		}
		b.WriteByte(']')
	default:
		writeJSON(b, n, 0)
	}
	return b.Len() <= limit
}

func writeIndent(b *bytes.Buffer, n int) {
	for range n {
		b.WriteByte(' ')
	}
}

// writeJSONString writes s (valid UTF-8) as a JSON string.
func writeJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
