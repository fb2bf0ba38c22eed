package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gpusched/gpusched/sim"
)

// Plots names the PNG files WritePlots writes.
var Plots = struct{ Allocation, Queue, WaitCDF, JCTCDF, Compare string }{
	"allocation.png", "queue.png", "wait_cdf.png", "jct_cdf.png", "compare.png",
}

// WritePlots writes the plots of runs into dir (which must exist): GPU
// allocation and useful utilisation over time, pending jobs over time,
// CDFs of queue wait and of completion time (one line per run), and a bar
// chart comparing the runs' allocation, utilisation and unusable free
// GPUs.
func WritePlots(dir string, runs ...Run) error {
	steps := []struct {
		name string
		fn   func(string, []Run) error
	}{
		{Plots.Allocation, plotAllocation},
		{Plots.Queue, plotQueue},
		{Plots.WaitCDF, func(p string, rs []Run) error {
			return plotCDF(p, "Queue wait (jobs that started)", "queue wait (log scale; waits under 1 s drawn at 1 s)", rs, func(j *sim.JobRecord) (float64, bool) {
				return j.Start - j.Submit, j.Start >= 0
			})
		}},
		{Plots.JCTCDF, func(p string, rs []Run) error {
			return plotCDF(p, "Job completion time (completed jobs)", "completion time, submit to end (log scale)", rs, func(j *sim.JobRecord) (float64, bool) {
				return j.End - j.Submit, j.State == sim.StateCompleted
			})
		}},
		{Plots.Compare, plotCompare},
	}
	for _, s := range steps {
		if err := s.fn(filepath.Join(dir, s.name), runs); err != nil {
			return fmt.Errorf("report: %s: %w", s.name, err)
		}
	}
	return nil
}

func save(p *plot.Plot, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// thin keeps at most n points, evenly spaced, always the last.
func thin(xys plotter.XYs, n int) plotter.XYs {
	if len(xys) <= n {
		return xys
	}
	out := make(plotter.XYs, 0, n+1)
	step := float64(len(xys)) / float64(n)
	for k := 0.0; int(k) < len(xys); k += step {
		out = append(out, xys[int(k)])
	}
	if out[len(out)-1] != xys[len(xys)-1] {
		out = append(out, xys[len(xys)-1])
	}
	return out
}

func series(title, ylabel string, runs []Run, y func(*sim.Sample) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (h)"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	for i, r := range runs {
		xys := make(plotter.XYs, len(r.Result.Samples))
		for k := range r.Result.Samples {
			s := &r.Result.Samples[k]
			xys[k] = plotter.XY{X: s.Time / 3600, Y: y(s)}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(thin(xys, 2000))
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		p.Legend.Add(r.Label, l)
	}
	return p, nil
}

// plotAllocation draws each run's allocation (solid) and, beside it in
// the same colour, its useful utilisation over each sample period
// (dashed).
func plotAllocation(path string, runs []Run) error {
	p, err := series("GPU allocation and useful utilisation", "share of GPU capacity (%)", runs, func(s *sim.Sample) float64 { return 100 * s.Allocation })
	if err != nil {
		return err
	}
	for i, r := range runs {
		if len(r.Result.Samples) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(r.Result.Samples))
		for k := range r.Result.Samples {
			s := &r.Result.Samples[k]
			xys[k] = plotter.XY{X: s.Time / 3600, Y: 100 * s.Utilisation}
		}
		l, err := plotter.NewLine(thin(xys, 2000))
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(r.Label+" useful", l)
	}
	p.Y.Min, p.Y.Max = 0, 100
	return save(p, path)
}

func plotQueue(path string, runs []Run) error {
	p, err := series("Queue length", "pending jobs", runs, func(s *sim.Sample) float64 { return float64(s.Pending) })
	if err != nil {
		return err
	}
	return save(p, path)
}

func plotCDF(path, title, xlabel string, runs []Run, pick func(*sim.JobRecord) (float64, bool)) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "fraction of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = durationTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	drawn := false
	xmax := 10.0
	for i, r := range runs {
		var xs []float64
		under := 0
		for k := range r.Result.Jobs {
			if v, ok := pick(&r.Result.Jobs[k]); ok {
				xs = append(xs, max(v, 1)) // log axis: below 1 s shows as 1 s
				if v < 1 {
					under++
				}
			}
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		xmax = max(xmax, xs[len(xs)-1])
		xys := make(plotter.XYs, len(xs))
		for k, x := range xs {
			xys[k] = plotter.XY{X: x, Y: float64(k+1) / float64(len(xs))}
		}
		l, err := plotter.NewLine(thin(xys, 2000))
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		label := r.Label
		if under > 0 {
			// Their step at 1 s is easy to miss: say how many.
			label = fmt.Sprintf("%s (%.0f%% under 1 s)", r.Label, 100*float64(under)/float64(len(xs)))
		}
		p.Legend.Add(label, l)
		drawn = true
	}
	if !drawn {
		p.X.Scale = plot.LinearScale{}
		p.X.Tick.Marker = plot.DefaultTicks{}
	} else {
		// Fix the range: a log axis cannot pad a degenerate one (all waits
		// zero) below zero.
		p.X.Min, p.X.Max = 1, xmax
	}
	return save(p, path)
}

// durationTicks marks a log axis in seconds at round durations (1s, 10s,
// 1m, 10m, 1h, 10h, 1d, 10d, 100d), labelled as such.
type durationTicks struct{}

// Ticks returns the round durations in [min, max].
func (durationTicks) Ticks(lo, hi float64) []plot.Tick {
	marks := []struct {
		v     float64
		label string
	}{{1, "1s"}, {10, "10s"}, {60, "1m"}, {600, "10m"}, {3600, "1h"}, {36000, "10h"}, {86400, "1d"}, {864000, "10d"}, {8640000, "100d"}}
	var out []plot.Tick
	for _, m := range marks {
		if m.v >= lo && m.v <= hi {
			out = append(out, plot.Tick{Value: m.v, Label: m.label})
		}
	}
	if len(out) < 2 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	return out
}

// plotCompare draws two bar charts side by side: shares (whole-run
// allocation, allocation while jobs waited, unusable free GPUs) and
// times (mean and p95 queue wait, mean JCT, in hours), one bar per run
// and metric.
func plotCompare(path string, runs []Run) error {
	shares, err := compareBars("Shares of GPU capacity", "%", runs, []barMetric{
		{"allocation (whole run)", func(s *sim.Summary) float64 { return 100 * s.AllocationRate }},
		{"allocation while jobs wait", func(s *sim.Summary) float64 { return 100 * s.BusyAllocation }},
		{"free GPUs unusable", func(s *sim.Summary) float64 { return 100 * s.Fragmentation.UnusableShareFree }},
	})
	if err != nil {
		return err
	}
	shares.Y.Min, shares.Y.Max = 0, 130 // room above 100% for the legend
	times, err := compareBars("Waits and completion times", "hours", runs, []barMetric{
		{"queue wait mean", func(s *sim.Summary) float64 { return s.Wait.Mean / 3600 }},
		{"queue wait p95", func(s *sim.Summary) float64 { return s.Wait.P95 / 3600 }},
		{"JCT mean", func(s *sim.Summary) float64 { return s.JCT.Mean / 3600 }},
	})
	if err != nil {
		return err
	}
	times.Y.Min = 0
	if times.Y.Max > 0 {
		times.Y.Max *= 1.3 // room for the legend
	}
	const w, h = 12 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(10), PadY: vg.Points(5), PadTop: vg.Points(5), PadBottom: vg.Points(5), PadLeft: vg.Points(5), PadRight: vg.Points(5)}
	plots := [][]*plot.Plot{{shares, times}}
	canvases := plot.Align(plots, t, dc)
	shares.Draw(canvases[0][0])
	times.Draw(canvases[0][1])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// barMetric is one bar series of compare.png.
type barMetric struct {
	name string
	v    func(*sim.Summary) float64
}

// compareBars is a bar chart of metrics, one group per run.
func compareBars(title, ylabel string, runs []Run, metrics []barMetric) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	w := vg.Points(20)
	if len(runs) > 0 {
		w = vg.Points(min(30, 200/float64(len(runs)*len(metrics))))
	}
	labels := make([]string, len(runs))
	top := 0.0
	for k, m := range metrics {
		vals := make(plotter.Values, len(runs))
		for i, r := range runs {
			vals[i] = m.v(&r.Result.Summary)
			top = max(top, vals[i])
			labels[i] = r.Label
		}
		if len(vals) == 0 {
			continue
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(k)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(k)-float64(len(metrics)-1)/2)
		p.Add(b)
		p.Legend.Add(m.name, b)
	}
	if len(labels) > 0 {
		p.NominalX(labels...)
	}
	p.Y.Max = top
	return p, nil
}
