package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestEmbed(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		// submit, schedule, bind
		"09:00  start    pretrain  on dgx-h100-1[0-7] dgx-h100-2[0-7]",
		// finish
		"10:00  finish   eval",
		// a GPU failure: the job on it is stopped and requeued from its
		// last checkpoint, and restarts once the GPU is back
		"10:10  FAULT    dgx-h100-2/gpu3 failed",
		"10:10  recover  pretrain  requeue: stopped and requeued; restarts from its 10:00 checkpoint, 2.7 GPU-h lost",
		"10:10  wait     pretrain  topology: needs 16 GPUs (2 tasks) in one tor",
		"11:30  start    pretrain  on dgx-h100-1[0-7] dgx-h100-2[0-7], resuming with 1h of work done",
		// a preemption: the cheapest victims (frequent checkpoints), not
		// the gang inside its minimum run time nor the jobs that never
		// checkpoint
		"12:05  preempt  sweep-1   for urgent, grace 5m: priority 0 < 10",
		"12:06  stopped  sweep-1   checkpointed and released its GPUs; 54m of work left, back in its queue",
		"12:06  start    urgent    on dgx-h100-4[0-7]",
		"13:06  start    sweep-1   on dgx-h100-4[0-1], resuming with 3h6m of work done",
		"16:30  finish   pretrain",
		// a restart from the saved state
		"13:30  RESTART  the host restarts: state saved",
		// live changes: a node joins, a quota edit adds a queue
		"14:00  JOIN     dgx-h100-5 joins tor2: 40 GPUs now",
		"14:30  QUOTA    ml guaranteed 32 GPUs, new queue interactive 8",
		"14:30  start    notebook  on dgx-h100-4[0]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("log lacks %q:\n%s", want, s)
		}
	}
	for _, never := range []string{"preempt  pretrain", "preempt  batch-"} {
		if strings.Contains(s, never) {
			t.Errorf("log has %q:\n%s", never, s)
		}
	}
	var again bytes.Buffer
	if err := run(&again); err != nil || again.String() != s {
		t.Errorf("a second run differs (%v)", err)
	}
}

// TestRestartChangesNothing: the day with the host's restart at 13:30
// (state saved, loaded into a fresh Scheduler) logs exactly the day
// without it, but for the restart's own line.
func TestRestartChangesNothing(t *testing.T) {
	var with, without bytes.Buffer
	if err := day(&with, true); err != nil {
		t.Fatal(err)
	}
	if err := day(&without, false); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(with.String(), "\n") {
		if !strings.Contains(line, "RESTART") {
			kept = append(kept, line)
		}
	}
	if got := strings.Join(kept, ""); got != without.String() {
		t.Fatalf("the day with a restart differs:\n%s\nwithout:\n%s", with.String(), without.String())
	}
}
