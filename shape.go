package gpusched

import (
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/gang"
)

// shapeKey is the class of a job: everything placement and quota depend
// on, nothing they do not (ID, priority, runtime, submission time).
func shapeKey(r *gang.Request) string {
	var b strings.Builder
	for i := range r.Groups {
		g := &r.Groups[i]
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(strconv.Itoa(g.Count))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(g.Min))
		b.WriteByte('x')
		switch g.Kind {
		case gang.TaskWhole:
			b.WriteString(strconv.Itoa(g.GPUs) + "g")
		case gang.TaskShare:
			b.WriteString(strconv.Itoa(g.Milli) + "m")
		case gang.TaskMIG:
			b.WriteString(g.MIGProfile)
		default:
			b.WriteString("cpu")
		}
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(g.CPUMilli, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(g.MemoryMiB, 10))
		if g.Models != nil {
			b.WriteByte('@')
			for k, m := range g.Models {
				if k > 0 {
					b.WriteByte('+')
				}
				b.WriteString(strconv.Itoa(int(m)))
			}
		}
	}
	for _, l := range r.Required {
		b.WriteString(";r" + strconv.Itoa(int(l)))
	}
	for _, l := range r.Preferred {
		b.WriteString(";p" + strconv.Itoa(int(l)))
	}
	if r.MaxPerHost > 0 {
		b.WriteString(";h" + strconv.Itoa(r.MaxPerHost))
	}
	return b.String()
}
