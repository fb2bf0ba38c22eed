package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuota(t *testing.T) {
	for _, c := range []struct {
		preempt bool
		want    []string
		after   string
	}{
		{true, []string{
			"reclaim by preemption",
			"preempt exp-4   for pretrain (queue experiments borrows quota pretraining reclaims",
			"10:00  start  pretrain pretraining",
			"pretraining waited 0s",
		}, "pretraining       32    32         0     0         0     0        1        0"},
		{false, []string{
			"reclaim without preemption",
			"reserved to start at 2025-03-03T13:00:00Z",
			"start  exp-7    experiments  on dgx-h100-1[0-7] (borrowing) (backfill",
			"13:00  start  pretrain pretraining",
			"pretraining waited 3h0m0s",
		}, "pretraining       32    32         0     0         0     0        1        0"},
	} {
		var out bytes.Buffer
		if err := run(&out, c.preempt); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range append(c.want,
			"experiments borrows pretraining's idle guarantee — quota view at 09:00",
			"start  exp-3    experiments  on dgx-h100-4[0-7] (borrowing)",
			"exp-7    experiments  quota: queue experiments: gpu: 48 GPUs in use + 8 GPUs > borrowing limit 48 GPUs",
			"submit pretrain pretraining  32 GPUs",
		) {
			if !strings.Contains(s, want) {
				t.Errorf("preempt=%v: output lacks %q:\n%s", c.preempt, want, s)
			}
		}
		// The quota views: before, experiments borrows 32 and pretraining
		// lends; after, pretraining uses its 32.
		before, after, ok := strings.Cut(s, "pretraining has reclaimed")
		if !ok {
			t.Fatal("no second view")
		}
		if !strings.Contains(before, "experiments       16    48         0     0        32") {
			t.Errorf("first view:\n%s", before)
		}
		if !strings.Contains(after, c.after) {
			t.Errorf("second view:\n%s", after)
		}
		// Deterministic: the same run prints the same bytes.
		var again bytes.Buffer
		if err := run(&again, c.preempt); err != nil || again.String() != s {
			t.Errorf("second run differs (%v)", err)
		}
	}
}
