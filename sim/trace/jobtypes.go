package trace

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// JobType is one row of a job type mapping file: job Job is of type Type
// (a class of the speed table, Job.Type), as written on line Line.
type JobType struct {
	Job, Type string
	Line      int
}

// JobTypes is a job type mapping read by ReadJobTypes: each job's type by
// its ID, in the file's order.
type JobTypes struct {
	// File is the name errors give.
	File string
	// Rows are the file's rows, in order; job IDs are unique.
	Rows []JobType
	byID map[string]int
}

// maxJobTypesLine bounds one line of a mapping file.
const maxJobTypesLine = 1 << 16

// ReadJobTypes reads a job type mapping: one job a line as JOB,TYPE (a
// job ID of the trace, a comma, its type), blank lines and lines that
// start with '#' ignored, and an optional header line "job,type". Spaces
// around either field are trimmed. Errors are *ParseError values naming
// file, line and field (job or type): a line without a comma, an empty
// field, a field with a comma, quote or control character, a job listed
// twice. Whether each type names a class of the speed table is the
// caller's check (JobTypes.Check), as is what to do with IDs the trace
// does not have (Assign counts them).
func ReadJobTypes(r io.Reader, file string) (*JobTypes, error) {
	t := &JobTypes{File: file, byID: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxJobTypesLine)
	perr := func(line int, field, format string, a ...any) error {
		return &ParseError{File: file, Line: line, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	line, header := 0, false
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if !utf8.ValidString(s) {
			return nil, perr(line, "", "not UTF-8")
		}
		id, typ, ok := strings.Cut(s, ",")
		if !ok {
			return nil, perr(line, "", "%q is not JOB,TYPE", s)
		}
		id, typ = strings.TrimSpace(id), strings.TrimSpace(typ)
		if !header && len(t.Rows) == 0 && strings.EqualFold(id, "job") && strings.EqualFold(typ, "type") {
			header = true
			continue
		}
		for _, f := range [...]struct{ name, v string }{{"job", id}, {"type", typ}} {
			switch {
			case f.v == "":
				return nil, perr(line, f.name, "empty")
			case strings.ContainsAny(f.v, ",\""):
				return nil, perr(line, f.name, "%q has a comma or a quote", f.v)
			case strings.ContainsFunc(f.v, func(r rune) bool { return r < ' ' || r == 0x7f }):
				return nil, perr(line, f.name, "%q has a control character", f.v)
			}
		}
		if i, dup := t.byID[id]; dup {
			return nil, perr(line, "job", "job %q is listed twice (first on line %d)", id, t.Rows[i].Line)
		}
		t.byID[id] = len(t.Rows)
		t.Rows = append(t.Rows, JobType{Job: id, Type: typ, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	if len(t.Rows) == 0 {
		return nil, &ParseError{File: file, Line: line, Msg: "no JOB,TYPE line"}
	}
	return t, nil
}

// Check returns a *ParseError naming the first row whose type valid
// refuses (file, line, field type), listing known, the valid types, in
// the message.
func (t *JobTypes) Check(valid func(string) bool, known []string) error {
	for _, r := range t.Rows {
		if !valid(r.Type) {
			return &ParseError{File: t.File, Line: r.Line, Field: "type",
				Msg: fmt.Sprintf("%q is not a job type of the speed table (%s)", r.Type, strings.Join(known, ", "))}
		}
	}
	return nil
}

// Assign sets the Type of every job the mapping names, and returns how
// many of the mapping's rows name no job of jobs (a mapping for a longer
// trace than the slice replayed). Jobs it does not name keep their type.
func (t *JobTypes) Assign(jobs []Job) (unmatched int) {
	seen := make([]bool, len(t.Rows))
	for i := range jobs {
		if k, ok := t.byID[jobs[i].Spec.ID]; ok {
			jobs[i].Type = t.Rows[k].Type
			seen[k] = true
		}
	}
	for _, s := range seen {
		if !s {
			unmatched++
		}
	}
	return unmatched
}

// AssignUniform gives every job a type drawn uniformly from types, as
// Gavel's simulator draws its jobs' types: the draw of a job depends only
// on seed and its ID, so a job keeps its type when the trace is sliced,
// perturbed or replayed at another load. types must not be empty.
func AssignUniform(jobs []Job, types []string, seed uint64) {
	for i := range jobs {
		h := fnv.New64a()
		h.Write([]byte(jobs[i].Spec.ID))
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		jobs[i].Type = types[r.IntN(len(types))]
	}
}
