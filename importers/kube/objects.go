package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxBytes bounds one input file.
const MaxBytes = 256 << 20

// Error is bad input: the file, the document (1-based, in a multi-document
// file), the object (Kind/name, and the item of a List), the line and the
// field path, such as "spec.resourceGroups[0].flavors[1].name".
type Error struct {
	File   string
	Doc    int
	Object string
	Line   int
	Field  string
	Err    error
}

// Error returns "FILE:LINE: document N (OBJECT): FIELD: ERR".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Doc > 0 {
		fmt.Fprintf(&b, ": document %d", e.Doc)
		if e.Object != "" {
			b.WriteString(" (" + e.Object + ")")
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// NoteKind says what a Note is about.
type NoteKind uint8

// Note kinds.
const (
	// Ignored: a field or object the importer does not read.
	Ignored NoteKind = iota + 1
	// Approximated: something gpusched models differently; the note says
	// how.
	Approximated
)

// String returns "ignored" or "approximated".
func (k NoteKind) String() string {
	switch k {
	case Ignored:
		return "ignored"
	case Approximated:
		return "approximated"
	}
	return "NoteKind(" + strconv.Itoa(int(k)) + ")"
}

// Note is one line of the mapping report: where (file, line, document,
// object, field), what kind, and what was done.
type Note struct {
	Kind   NoteKind
	File   string
	Line   int
	Doc    int
	Object string
	Field  string
	Msg    string
}

// String renders the note as "KIND FILE:LINE (OBJECT) FIELD: MSG".
func (n Note) String() string {
	var b strings.Builder
	b.WriteString(n.Kind.String() + ": ")
	if n.File != "" {
		b.WriteString(n.File)
		if n.Line > 0 {
			b.WriteString(":" + strconv.Itoa(n.Line))
		}
		b.WriteString(" ")
	}
	if n.Object != "" {
		b.WriteString("(" + n.Object + ") ")
	}
	if n.Field != "" {
		b.WriteString(n.Field + ": ")
	}
	b.WriteString(n.Msg)
	return b.String()
}

// object is one Kubernetes object of an input file: a document, or an item
// of a List document.
type object struct {
	file       string
	doc        int
	item       int // index in a List; -1 for a plain document
	apiVersion string
	kind       string
	meta       objectMeta
	node       *yaml.Node // the object's mapping
}

// objectMeta is the part of metadata the importers read.
type objectMeta struct {
	Name              string            `yaml:"name"`
	Namespace         string            `yaml:"namespace"`
	Labels            map[string]string `yaml:"labels"`
	Annotations       map[string]string `yaml:"annotations"`
	CreationTimestamp string            `yaml:"creationTimestamp"`
	UID               string            `yaml:"uid"`
	OwnerReferences   []ownerRef        `yaml:"ownerReferences"`
	// Bookkeeping that says nothing about scheduling.
	ResourceVersion string    `yaml:"resourceVersion"`
	Generation      int64     `yaml:"generation"`
	ManagedFields   yaml.Node `yaml:"managedFields"`
	Finalizers      []string  `yaml:"finalizers"`
	GenerateName    string    `yaml:"generateName"`
	SelfLink        string    `yaml:"selfLink"`
	DeletionTS      string    `yaml:"deletionTimestamp"`
	DeletionGrace   *int64    `yaml:"deletionGracePeriodSeconds"`
}

type ownerRef struct {
	APIVersion         string `yaml:"apiVersion"`
	Kind               string `yaml:"kind"`
	Name               string `yaml:"name"`
	UID                string `yaml:"uid"`
	Controller         *bool  `yaml:"controller"`
	BlockOwnerDeletion *bool  `yaml:"blockOwnerDeletion"`
}

// id is "Kind/namespace/name" or "Kind/name".
func (o *object) id() string {
	s := o.kind + "/"
	if o.meta.Namespace != "" {
		s += o.meta.Namespace + "/"
	}
	s += o.meta.Name
	if o.item >= 0 {
		s += fmt.Sprintf(" [List item %d]", o.item)
	}
	return s
}

// group is the API group of apiVersion ("" for core v1).
func (o *object) group() string {
	g, _, ok := strings.Cut(o.apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

func (o *object) errAt(n *yaml.Node, field string, err error) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: o.file, Doc: o.doc, Object: o.id(), Line: line, Field: field, Err: err}
}

func (o *object) note(kind NoteKind, n *yaml.Node, field, format string, args ...any) Note {
	line := 0
	if n != nil {
		line = n.Line
	}
	return Note{Kind: kind, File: o.file, Line: line, Doc: o.doc, Object: o.id(), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// parseObjects splits data (multi-document YAML or JSON, Lists expanded)
// into objects. Empty documents are skipped.
func parseObjects(data []byte, file string) ([]object, error) {
	if len(data) > MaxBytes {
		return nil, &Error{File: file, Err: fmt.Errorf("larger than %d bytes", MaxBytes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []object
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, &Error{File: file, Doc: doc, Err: err}
		}
		root := &n
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		if root.Kind != yaml.MappingNode {
			return nil, &Error{File: file, Doc: doc, Line: root.Line, Err: errors.New("not a Kubernetes object (want a mapping with apiVersion and kind)")}
		}
		o, err := newObject(root, file, doc, -1)
		if err != nil {
			return nil, err
		}
		if o.kind != "List" && !strings.HasSuffix(o.kind, "List") {
			out = append(out, o)
			continue
		}
		items := mapValue(root, "items")
		if items == nil || items.Tag == "!!null" {
			continue
		}
		if items.Kind != yaml.SequenceNode {
			return nil, &Error{File: file, Doc: doc, Line: items.Line, Field: "items", Err: errors.New("not a list")}
		}
		for i, it := range items.Content {
			if it.Kind != yaml.MappingNode {
				return nil, &Error{File: file, Doc: doc, Line: it.Line, Field: fmt.Sprintf("items[%d]", i), Err: errors.New("not an object")}
			}
			io, err := newObject(it, file, doc, i)
			if err != nil {
				return nil, err
			}
			if io.kind == "" && o.kind != "List" {
				io.kind = strings.TrimSuffix(o.kind, "List")
			}
			if io.apiVersion == "" {
				io.apiVersion = o.apiVersion
			}
			out = append(out, io)
		}
	}
}

func newObject(n *yaml.Node, file string, doc, item int) (object, error) {
	o := object{file: file, doc: doc, item: item, node: n}
	if v := mapValue(n, "apiVersion"); v != nil {
		o.apiVersion = v.Value
	}
	if v := mapValue(n, "kind"); v != nil {
		o.kind = v.Value
	}
	if o.kind == "" && item < 0 {
		return o, &Error{File: file, Doc: doc, Line: n.Line, Field: "kind", Err: errors.New("missing")}
	}
	if m := mapValue(n, "metadata"); m != nil {
		if err := m.Decode(&o.meta); err != nil {
			return o, &Error{File: file, Doc: doc, Line: m.Line, Field: "metadata", Err: yamlErr(err)}
		}
	}
	return o, nil
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// yamlErr shortens yaml.v3's messages ("yaml: unmarshal errors:\n  line
// 3: …") to one line.
func yamlErr(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return errors.New(strings.Join(te.Errors, "; "))
	}
	return err
}

// decodeSpec decodes field key (e.g. "spec") of o into out, and reports
// every key below it that out's type has no field for as an Ignored note.
// A missing key leaves out as it is.
func (o *object) decode(key string, out any, notes *[]Note) error {
	n := mapValue(o.node, key)
	if n == nil || n.Tag == "!!null" {
		return nil
	}
	if err := n.Decode(out); err != nil {
		return o.errAt(n, key, yamlErr(err))
	}
	unknownFields(n, reflect.TypeOf(out).Elem(), key, func(at *yaml.Node, field string) {
		*notes = append(*notes, o.note(Ignored, at, field, "not understood; left out"))
	})
	return nil
}

// topKeys reports the top-level keys of o other than apiVersion, kind,
// metadata and those given.
func (o *object) topKeys(notes *[]Note, known ...string) {
	for i := 0; i+1 < len(o.node.Content); i += 2 {
		k := o.node.Content[i]
		switch k.Value {
		case "apiVersion", "kind", "metadata":
			continue
		}
		if !contains(known, k.Value) {
			*notes = append(*notes, o.note(Ignored, k, k.Value, "not understood; left out"))
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var (
	nodeType = reflect.TypeOf(yaml.Node{})
	timeType = reflect.TypeOf(time.Time{})
)

// unknownFields walks n against t (the Go type it was decoded into) and
// calls report for every mapping key t has no field for.
func unknownFields(n *yaml.Node, t reflect.Type, path string, report func(at *yaml.Node, field string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nodeType || t == timeType || n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := map[string]reflect.Type{}
		structFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				report(k, path+"."+k.Value)
				continue
			}
			unknownFields(v, ft, path+"."+k.Value, report)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			unknownFields(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value, report)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, it := range n.Content {
			unknownFields(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i), report)
		}
	}
}

func structFields(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "inline") {
			structFields(f.Type, into)
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		into[name] = f.Type
	}
}

// fieldNode returns the node at a dotted path below o's root (indexes as
// "[i]"), or nil; for line numbers in notes and errors.
func (o *object) fieldNode(path string) *yaml.Node {
	n := o.node
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		if name != "" {
			n = mapValue(n, name)
		}
		for idx != "" && n != nil {
			num, rest, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
			idx = strings.TrimPrefix(rest, "[")
		}
		if n == nil {
			return nil
		}
	}
	return n
}
