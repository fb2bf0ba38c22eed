package simcli

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"
)

// openbSpecLabels returns, by the 1-based line each record starts on (as
// trace.Job.Line counts), the gpu_spec column of an openb pod list as the
// FGD artifact keys its typical pods by it: the models as written, empty
// parts dropped, repeats and order kept ("V100M16|V100M32|V100M32"). The
// trace reader's Models drop repeats; FGD's workload learned the
// artifact's way (--sampling artifact) needs the difference. Records it
// cannot read are left out (the trace reader reports them).
func openbSpecLabels(raw []byte) map[int]string {
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil
	}
	col := -1
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")), "gpu_spec") {
			col = i
		}
	}
	if col < 0 {
		return nil
	}
	out := map[int]string{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil || col >= len(rec) {
			continue
		}
		line, _ := r.FieldPos(0)
		var parts []string
		for p := range strings.SplitSeq(rec[col], "|") {
			if p = strings.TrimSpace(p); p != "" && !strings.EqualFold(p, "nan") {
				parts = append(parts, p)
			}
		}
		out[line] = strings.Join(parts, "|")
	}
}
