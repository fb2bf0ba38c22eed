package topology

import "testing"

func BenchmarkSmokeAllocRelease(b *testing.B) {
	c := mustPreset(b, "h100-100k")
	l := NewLedger(c)
	for g := GPUID(0); g < GPUID(c.NumGPUs()); g += 2 {
		l.AllocateGPU(g)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := GPUID(c.NumGPUs())
	for i := 0; i < b.N; i++ {
		g := GPUID(i*2+1) % n
		if err := l.AllocateGPU(g); err != nil {
			b.Fatal(err)
		}
		if err := l.ReleaseGPU(g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSmokeBestHostToR(b *testing.B) {
	c := mustPreset(b, "h100-100k")
	l := NewLedger(c)
	for g := GPUID(0); g < GPUID(c.NumGPUs()); g += 2 {
		l.AllocateGPU(g)
	}
	tors := c.DomainsAt(2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := l.BestHost(tors[i%len(tors)], 3, NoModel); !ok {
			b.Fatal("none")
		}
	}
}

func BenchmarkSmokeBuild(b *testing.B) {
	s, _ := Preset("h100-100k")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Build(s); err != nil {
			b.Fatal(err)
		}
	}
}
