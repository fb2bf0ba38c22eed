package trace

import (
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strings"
)

// csvTable reads a CSV file with a header row and hands out records with
// their line numbers.
type csvTable struct {
	r     *csv.Reader
	st    *recordState
	cols  map[string]int
	names []string
}

// newCSVTable reads the header. Every name in required must be a column;
// with Options.Strict, every column must be in required or optional, and
// otherwise the columns that are in neither go to Stats.IgnoredColumns.
// Column names compare after trimming spaces, case-insensitively.
func newCSVTable(r io.Reader, st *recordState, required, optional []string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	t := &csvTable{r: cr, st: st, cols: map[string]int{}}
	hdr, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, st.perr(1, "", "empty file: no header row")
	}
	if err != nil {
		return nil, t.csvErr(err)
	}
	for i, h := range hdr {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := t.cols[h]; dup && h != "" {
			return nil, st.perr(1, h, "column named twice in the header")
		}
		t.cols[h] = i
		t.names = append(t.names, h)
	}
	for _, want := range required {
		if _, ok := t.cols[want]; !ok {
			return nil, st.perr(1, want, "missing column (header has %s)", strings.Join(t.names, ", "))
		}
	}
	for _, h := range t.names {
		if slices.Contains(required, h) || slices.Contains(optional, h) {
			continue
		}
		if st.opt.Strict {
			return nil, st.perr(1, h, "unknown column (known: %s)", strings.Join(append(slices.Clone(required), optional...), ", "))
		}
		st.stats.IgnoredColumns = append(st.stats.IgnoredColumns, h)
	}
	return t, nil
}

func (t *csvTable) has(name string) bool { _, ok := t.cols[name]; return ok }

// next returns the next record and its line. Errors are io.EOF or a
// *ParseError (a CSV syntax error or a record with the wrong number of
// fields); the table stays usable after a *ParseError.
func (t *csvTable) next() ([]string, int, error) {
	rec, err := t.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		return nil, 0, t.csvErr(err)
	}
	line, _ := t.r.FieldPos(0)
	if len(rec) != len(t.names) {
		return nil, line, t.st.perr(line, "", "%d fields, the header has %d", len(rec), len(t.names))
	}
	return rec, line, nil
}

func (t *csvTable) csvErr(err error) *ParseError {
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		return t.st.perr(ce.Line, "", "%v", ce.Err)
	}
	return t.st.perr(0, "", "%v", err)
}

// get returns the named field of rec ("" when the column is absent).
func (t *csvTable) get(rec []string, name string) string {
	i, ok := t.cols[name]
	if !ok {
		return ""
	}
	return strings.TrimSpace(rec[i])
}

// nextJob reads records until parse keeps one, and returns that job
// (counted as read); io.EOF after the last record. parse returns the job,
// whether to keep it (false: filtered out, already counted), or a
// *ParseError. A malformed record, from the table or from parse, goes to
// recordState.bad: returned in errors mode, counted and skipped otherwise.
func (t *csvTable) nextJob(parse func(rec []string, line int) (Job, bool, *ParseError)) (Job, error) {
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			return Job{}, io.EOF
		}
		var pe *ParseError
		if err == nil {
			var j Job
			var keep bool
			j, keep, pe = parse(rec, line)
			if pe == nil {
				if !keep {
					continue
				}
				t.st.stats.Read++
				return j, nil
			}
		} else {
			pe = err.(*ParseError)
		}
		if err := t.st.bad(pe); err != nil {
			return Job{}, err
		}
	}
}

// fieldErr wraps a conversion error as a *ParseError for a field.
func (t *csvTable) fieldErr(line int, field string, err error) *ParseError {
	return t.st.perr(line, field, "%v", err)
}
