package trace

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

func open(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func collect(t testing.TB, r Reader, err error) []Job {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := j.Spec.Validate(); err != nil {
			t.Fatalf("line %d: invalid spec: %v", j.Line, err)
		}
	}
	return jobs
}

// shape renders the groups as "count×gpus" pairs.
func shape(j workload.Job) string {
	var parts []string
	for _, g := range j.Groups {
		s := itoa(g.Count) + "x" + itoa(g.GPUs)
		if g.GPUMilli > 0 {
			s = itoa(g.Count) + "x" + itoa(g.GPUMilli) + "m"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "+")
}

func itoa(n int) string { return strconv.Itoa(n) }

type want struct {
	id, queue, shape string
	submit, dur      time.Duration
	line             int
}

func check(t *testing.T, got []Job, ws []want) {
	t.Helper()
	if len(got) != len(ws) {
		t.Fatalf("%d jobs, want %d: %+v", len(got), len(ws), got)
	}
	for i, w := range ws {
		g := got[i]
		if g.Spec.ID != w.id || g.Spec.Queue != w.queue || shape(g.Spec) != w.shape || g.Submit != w.submit || g.Duration != w.dur || g.Line != w.line {
			t.Errorf("job %d = {%s %s %s submit %v dur %v line %d}, want %+v", i, g.Spec.ID, g.Spec.Queue, shape(g.Spec), g.Submit, g.Duration, g.Line, w)
		}
	}
}

func TestPhillyCSV(t *testing.T) {
	r, err := NewPhillyCSV(open(t, "philly_sample.csv"), Options{})
	jobs := collect(t, r, err)
	check(t, jobs, []want{
		{"philly-2", "11cb48", "1x1", 0, 66 * time.Second, 2},
		// 06:13:03 is 48m52s before the first row: a negative offset.
		{"philly-3", "6214e9", "2x8", -2932 * time.Second, 2951 * time.Second, 3},
		// 12 GPUs: one full 8-GPU task and a 4-GPU remainder.
		{"philly-4", "6214e9", "1x8+1x4", 185 * time.Second, 120 * time.Second, 4},
	})
	if s := r.Stats(); s.Read != 3 || s.Filtered != 1 || s.FilterReasons["zero duration"] != 1 {
		t.Errorf("stats %+v", s)
	}
	if shift := Rebase(jobs); shift != -2932*time.Second || jobs[0].Spec.ID != "philly-3" || jobs[0].Submit != 0 || jobs[1].Submit != 2932*time.Second {
		t.Errorf("Rebase: shift %v, first %s at %v", shift, jobs[0].Spec.ID, jobs[0].Submit)
	}
}

func TestPhillyCSVEpochAndShape(t *testing.T) {
	epoch := time.Date(2017, 10, 9, 0, 0, 0, 0, time.UTC)
	r, err := NewPhillyCSV(open(t, "philly_sample.csv"), Options{Epoch: epoch, Shape: Shape{MaxGPUsPerTask: 4, CPUMilliPerGPU: 1000, Topology: []workload.Constraint{{Level: "tor"}}}})
	jobs := collect(t, r, err)
	// 07:01:55 is 25,315 s after midnight.
	if jobs[0].Submit != 25315*time.Second {
		t.Errorf("submit %v", jobs[0].Submit)
	}
	if shape(jobs[1].Spec) != "4x4" || jobs[1].Spec.Groups[0].CPUMilli != 4000 || len(jobs[1].Spec.Topology) != 1 || len(jobs[0].Spec.Topology) != 0 {
		t.Errorf("shape %s %+v", shape(jobs[1].Spec), jobs[1].Spec)
	}
}

func TestPhillyJSON(t *testing.T) {
	r := NewPhillyJSON(open(t, "philly_cluster_job_log.json"), Options{File: "log.json"})
	jobs := collect(t, r, nil)
	check(t, jobs, []want{
		// 74 s + 2 d 5:39:42 over two attempts.
		{"application_1506638472019_14199", "ee9e8c", "1x8", 0, 193256 * time.Second, 2},
		// Only the attempt with both times counts; 2 servers × 2 GPUs.
		{"application_1506638472019_14201", "b436b2", "2x2", -699 * time.Second, time.Hour, 29},
	})
	if s := r.Stats(); s.FilterReasons["no completed attempt"] != 1 {
		t.Errorf("stats %+v", s)
	}
	// JSON Lines form of the same log.
	lines := `{"jobid":"a","vc":"v","submitted_time":"2017-10-07 01:00:00","attempts":[{"start_time":"2017-10-07 01:00:10","end_time":"2017-10-07 01:01:10","detail":[{"ip":"m1","gpus":["gpu0"]}]}]}
{"jobid":"b","vc":"v","submitted_time":"2017-10-07 01:00:05","attempts":[{"start_time":"2017-10-07 01:00:10","end_time":"2017-10-07 01:00:20","detail":[{"ip":"m1","gpus":["gpu0","gpu1","gpu2"]},{"ip":"m2","gpus":["gpu0"]}]}]}
`
	jobs = collect(t, NewPhillyJSON(strings.NewReader(lines), Options{}), nil)
	check(t, jobs, []want{{"a", "v", "1x1", 0, time.Minute, 1}, {"b", "v", "1x4", 5 * time.Second, 10 * time.Second, 2}})
}

func TestHeliosAcme(t *testing.T) {
	r, err := NewHeliosCSV(open(t, "helios_cluster_log.csv"), Options{})
	jobs := collect(t, r, err)
	check(t, jobs, []want{
		{"1425511", "vcJkd", "1x1", 0, 36848 * time.Second, 2},
		{"1425512", "vchbv", "1x4", 26 * time.Second, 249 * time.Second, 3},
		// 16 GPUs on 2 nodes: 2 tasks of 8.
		{"1425513", "vcpDC", "2x8", 27 * time.Second, 675233 * time.Second, 4},
	})
	if jobs[1].Spec.Groups[0].CPUMilli != 16000 || jobs[2].Spec.Groups[0].CPUMilli != 32000 {
		t.Errorf("cpu %d %d", jobs[1].Spec.Groups[0].CPUMilli, jobs[2].Spec.Groups[0].CPUMilli)
	}
	if s := r.Stats(); s.FilterReasons["no GPU"] != 1 || s.FilterReasons["zero duration"] != 1 {
		t.Errorf("stats %+v", s)
	}

	r, err = NewAcmeCSV(open(t, "acme_trace_seren.csv"), Options{})
	jobs = collect(t, r, err)
	check(t, jobs, []want{
		{"5778432", "Other", "1x8", 0, 117 * time.Second, 2},
		{"5778469", "Pretrain", "1x8", 336 * time.Second, 2693 * time.Second, 3},
		// 16:30 UTC is 00:30+08:00, 11 m 38 s after the first job.
		{"5778470", "Pretrain", "4x8", 698 * time.Second, time.Hour, 4},
	})
	r, err = NewAcmeCSV(open(t, "acme_trace_kalos.csv"), Options{QueueFrom: "user"})
	jobs = collect(t, r, err)
	check(t, jobs, []want{
		{"dlctk696s0jbvitv", "uf794", "8x8", 0, 18 * time.Second, 2},
		{"dlc1t2ypl09b8qtp", "uf794", "8x8", 1664 * time.Second, 82 * time.Second, 3},
	})
	if g := jobs[0].Spec.Groups[0]; g.MemoryMiB != 1000*1024 || g.CPUMilli != 120000 {
		t.Errorf("kalos per-task memory %d cpu %d", g.MemoryMiB, g.CPUMilli)
	}
}

func TestGeneric(t *testing.T) {
	m, err := ParseMapping("id=name,submit=arrive,duration=secs,gpus=gpus,gpu-milli=share,queue=team,priority=prio,models=model")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewCSV(open(t, "generic.csv"), m, Options{})
	jobs := collect(t, r, err)
	check(t, jobs, []want{
		{"a", "research", "1x2", 0, time.Minute, 2},
		{"b", "infer", "1x500m", 30500 * time.Millisecond, 2 * time.Minute, 3},
		{"c", "research", "2x8", 45 * time.Second, 10 * time.Second, 4},
	})
	if jobs[0].Spec.Priority != 5 || strings.Join(jobs[0].Spec.Groups[0].Models, ",") != "A100,H100" {
		t.Errorf("job a: %+v", jobs[0].Spec)
	}

	m2, _ := ParseMapping("id=name,submit=arrive,duration=secs,gpus=gpus,queue=team")
	jl, err := NewJSONL(open(t, "generic.jsonl"), m2, Options{})
	jobs = collect(t, jl, err)
	check(t, jobs, []want{{"a", "research", "1x2", 0, time.Minute, 1}, {"b", "infer", "1x1", 30500 * time.Millisecond, 2 * time.Minute, 3}})

	jl, _ = NewJSONL(open(t, "generic.jsonl"), m2, Options{Strict: true})
	_, err = Collect(jl)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != "extra" {
		t.Errorf("strict JSONL: %v", err)
	}
}

func TestSynthetic(t *testing.T) {
	s := Synthetic{Seed: 7, Jobs: 2000, MeanInterarrival: time.Minute, Queues: []Weighted[string]{{"a", 1}, {"b", 3}}}
	r1, err := NewSynthetic(s)
	a := collect(t, r1, err)
	r2, _ := NewSynthetic(s)
	b := collect(t, r2, nil)
	if len(a) != 2000 {
		t.Fatalf("%d jobs", len(a))
	}
	qb := 0
	for i := range a {
		if a[i].Submit != b[i].Submit || a[i].Duration != b[i].Duration || shape(a[i].Spec) != shape(b[i].Spec) {
			t.Fatalf("job %d differs between two runs of one seed", i)
		}
		if i > 0 && a[i].Submit < a[i-1].Submit {
			t.Fatal("arrivals out of order")
		}
		if a[i].Duration < time.Minute || a[i].Duration > 7*24*time.Hour {
			t.Fatalf("duration %v out of range", a[i].Duration)
		}
		if a[i].Spec.Queue == "b" {
			qb++
		}
	}
	// Mean interarrival 1 min: 2,000 jobs span about 2,000 min (±10%).
	if span := a[len(a)-1].Submit; span < 1800*time.Minute || span > 2200*time.Minute {
		t.Errorf("span %v", span)
	}
	if qb < 1350 || qb > 1650 { // 3/4 of 2,000 = 1,500
		t.Errorf("queue b drew %d of 2000", qb)
	}
	if _, err := NewSynthetic(Synthetic{Jobs: 1}); err == nil {
		t.Error("zero interarrival accepted")
	}
	if d := (Synthetic{Sizes: []Weighted[int]{{2, 1}}, MedianDuration: time.Hour, DurationSigma: 1e-9}).InterarrivalFor(100, 0.5); d < 143*time.Second || d > 145*time.Second {
		// 2 GPU-hours per job over 50 GPUs of offered load: one job every 144 s.
		t.Errorf("InterarrivalFor = %v", d)
	}
}

func TestReadVCs(t *testing.T) {
	vcs, err := ReadVCs(strings.NewReader("vc,node num\nalpha,2\nbeta,3\n"), 8, Options{})
	if err != nil || len(vcs) != 2 || vcs[1] != (VC{"beta", 3, 24}) {
		t.Fatalf("%v %v", vcs, err)
	}
	for _, bad := range []string{"vc,nodes\na,1\n", "vc,node num\na,1\na,2\n", "vc,node num\na,-1\n", "vc,node num\n,1\n"} {
		if _, err := ReadVCs(strings.NewReader(bad), 8, Options{}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestBadInput checks that each kind of bad record is an error naming the
// line and field, or a counted skip when asked.
func TestBadInput(t *testing.T) {
	hdr := "timestamp,duration,num_gpus,gpu_time,cluster\n"
	ok := "2017-10-09 07:01:55,66.0,1,66.0,a\n"
	cases := []struct {
		name, body, field string
		line              int
		kept              int // jobs left in skip mode with a good row after
	}{
		{"negative duration", ok + "2017-10-09 07:01:55,-5,1,1,a\n", "duration", 3, 2},
		{"bad time", ok + "yesterday,5,1,1,a\n", "timestamp", 3, 2},
		{"bad gpus", ok + "2017-10-09 07:01:55,5,x,1,a\n", "num_gpus", 3, 2},
		{"fractional gpus", ok + "2017-10-09 07:01:55,5,1.5,1,a\n", "num_gpus", 3, 2},
		{"short row", ok + "2017-10-09 07:01:55,5\n", "", 3, 2},
		{"bad quote", ok + "2017-10-09 07:01:55,\"5,1,1,a\n", "", 3, 1}, // the open quote swallows the rest of the file
		{"empty vc", ok + "2017-10-09 07:01:55,5,1,1,\n", "cluster", 3, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewPhillyCSV(strings.NewReader(hdr+c.body), Options{File: "p.csv"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Collect(r)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != c.line || pe.Field != c.field || pe.File != "p.csv" {
				t.Fatalf("got %v (%#v), want line %d field %q", err, pe, c.line, c.field)
			}
			r, _ = NewPhillyCSV(strings.NewReader(hdr+c.body+ok), Options{SkipMalformed: true})
			jobs, err := Collect(r)
			if err != nil || len(jobs) != c.kept || r.Stats().Skipped != 1 || r.Stats().FirstSkip == nil {
				t.Fatalf("skip mode: %d jobs, %v, %+v", len(jobs), err, r.Stats())
			}
		})
	}
	if _, err := NewPhillyCSV(strings.NewReader("timestamp,duration,gpus,cluster\n"), Options{}); err == nil || !strings.Contains(err.Error(), "num_gpus") {
		t.Errorf("missing column: %v", err)
	}
	if _, err := NewPhillyCSV(strings.NewReader(hdr[:len(hdr)-1]+",extra\n"), Options{Strict: true}); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("unknown column under Strict: %v", err)
	}
	if _, err := NewPhillyCSV(strings.NewReader(""), Options{}); err == nil {
		t.Error("empty file accepted")
	}
	m, _ := ParseMapping("submit=t,duration=d,gpus=nope")
	if _, err := NewCSV(strings.NewReader("t,d,g\n1,2,3\n"), m, Options{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("mapping names an absent column: %v", err)
	}
	if _, err := ParseMapping("submit=t,duration=d,gpus=g,colour=red"); err == nil {
		t.Error("unknown mapping field accepted")
	}
	// JSON: a syntax error ends the stream with its line.
	_, err := Collect(NewPhillyJSON(strings.NewReader("[\n{\"jobid\": \"a\",\n\"vc\": }\n]"), Options{}))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 {
		t.Errorf("JSON syntax error: %v", err)
	}
	// JSON: end before start is a negative duration, skippable.
	neg := `[{"jobid":"a","vc":"v","submitted_time":"2017-10-07 01:00:00","attempts":[{"start_time":"2017-10-07 02:00:00","end_time":"2017-10-07 01:00:00","detail":[{"ip":"m","gpus":["gpu0"]}]}]}]`
	_, err = Collect(NewPhillyJSON(strings.NewReader(neg), Options{}))
	if !errors.As(err, &pe) || pe.Field != "attempts[0].end_time" {
		t.Errorf("negative attempt: %v", err)
	}
	pj := NewPhillyJSON(strings.NewReader(neg), Options{SkipMalformed: true})
	if jobs, err := Collect(pj); err != nil || len(jobs) != 0 || pj.Stats().Skipped != 1 {
		t.Errorf("skip negative attempt: %v %v", jobs, err)
	}
	if _, err := Collect(NewPhillyJSON(strings.NewReader(`[{"jobid": 5}]`), Options{})); !errors.As(err, &pe) || pe.Field != "jobid" {
		t.Errorf("wrong type: %v", err)
	}
}

func TestRealPhilly(t *testing.T) {
	f, err := os.Open("../../../shared/data/philly/philly.csv")
	if err != nil {
		t.Skip("../shared/data/philly not present (the shared Philly data is optional): ", err)
	}
	defer f.Close()
	r, err := NewPhillyCSV(f, Options{File: "philly.csv"})
	jobs := collect(t, r, err)
	if len(jobs) != 82247 {
		t.Errorf("%d jobs, want 82,247", len(jobs))
	}
	Rebase(jobs)
	if jobs[0].Submit != 0 || jobs[len(jobs)-1].Submit < 100*24*time.Hour {
		t.Errorf("span %v", jobs[len(jobs)-1].Submit)
	}
	vf, err := os.Open("../../../shared/data/philly/philly_vc.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	vcs, err := ReadVCs(vf, 8, Options{})
	total := 0
	for _, v := range vcs {
		total += v.GPUs
	}
	if err != nil || len(vcs) != 11 || total != 2816 {
		t.Errorf("%d VCs, %d GPUs, %v", len(vcs), total, err)
	}
}

func TestScaleToLoad(t *testing.T) {
	jobs := []Job{
		{Spec: workload.Job{Groups: []workload.TaskGroup{{Count: 1, GPUs: 2}}}, Submit: 0, Duration: time.Hour},
		{Spec: workload.Job{Groups: []workload.TaskGroup{{Count: 1, GPUMilli: 500}}}, Submit: 10 * time.Hour, Duration: 2 * time.Hour},
	}
	// Demand 2×1 + 0.5×2 = 3 GPU-hours over 10 h on 3 GPUs: 10%.
	if l := OfferedLoad(jobs, 3); math.Abs(l-0.1) > 1e-12 {
		t.Fatalf("load %v", l)
	}
	f, err := ScaleToLoad(jobs, 3, 0.5)
	if err != nil || math.Abs(f-0.2) > 1e-12 || jobs[1].Submit != 2*time.Hour {
		t.Fatalf("factor %v, submit %v, %v", f, jobs[1].Submit, err)
	}
	if _, err := ScaleToLoad(jobs[:1], 3, 1); err == nil {
		t.Error("a single arrival has no span to scale")
	}
}

func TestReplicate(t *testing.T) {
	var jobs []Job
	for i := range 10 {
		jobs = append(jobs, Job{Spec: workload.Job{ID: strconv.Itoa(i), Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, Submit: time.Duration(i) * time.Minute, Duration: time.Hour})
	}
	out, err := Replicate(jobs, 3, 1)
	if err != nil || len(out) != 30 {
		t.Fatalf("%d %v", len(out), err)
	}
	ids := map[string]bool{}
	for _, j := range out {
		if ids[j.Spec.ID] || j.Submit < 0 || j.Submit > 9*time.Minute {
			t.Fatalf("job %s at %v", j.Spec.ID, j.Submit)
		}
		ids[j.Spec.ID] = true
	}
	again, _ := Replicate(jobs, 3, 1)
	for i := range out {
		if out[i].Submit != again[i].Submit {
			t.Fatal("not deterministic")
		}
	}
	if _, err := Replicate(jobs, 0, 1); err == nil {
		t.Error("k = 0 accepted")
	}
}
