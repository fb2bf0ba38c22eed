package simcli

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/sim/report"
)

// writeSweepIntervals writes, when seed is swept, one row per point of
// the other parameters: the number of seeds and each metric's median over
// them with its 95% interval (report.MedianCI), as
// METRIC_median, METRIC_lo, METRIC_hi. It reports false when seed is not
// swept (nothing to write). Rows come in the grid's order.
func writeSweepIntervals(w io.Writer, params []param, rows []sweepRow) (bool, error) {
	si := slices.IndexFunc(params, func(p param) bool { return p.name == "seed" })
	if si < 0 {
		return false, nil
	}
	var keys []string
	groups := map[string][]sweepRow{}
	for _, r := range rows {
		other := slices.Delete(slices.Clone(r.values), si, si+1)
		k := strings.Join(other, "\x00")
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	cw := csv.NewWriter(w)
	var hdr []string
	for i, p := range params {
		if i != si {
			hdr = append(hdr, p.name)
		}
	}
	hdr = append(hdr, "seeds")
	for _, c := range sweepColumns {
		hdr = append(hdr, c.name+"_median", c.name+"_lo", c.name+"_hi")
	}
	cw.Write(hdr)
	for _, k := range keys {
		g := groups[k]
		rec := slices.Delete(slices.Clone(g[0].values), si, si+1)
		rec = append(rec, strconv.Itoa(len(g)))
		for _, c := range sweepColumns {
			var xs []float64
			for i := range g {
				if v, err := strconv.ParseFloat(c.v(&g[i].sum), 64); err == nil {
					xs = append(xs, v)
				}
			}
			if len(xs) == 0 {
				rec = append(rec, "", "", "")
				continue
			}
			iv := report.MedianCI(xs, 0.95)
			rec = append(rec, ff(iv.Median), ff(iv.Lo), ff(iv.Hi))
		}
		cw.Write(rec)
	}
	cw.Flush()
	return true, cw.Error()
}
