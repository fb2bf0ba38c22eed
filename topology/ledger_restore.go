package topology

// TrialRestore re-applies claims that TrialRelease took back, ignoring
// health: the companion of TrialRelease for planners that ask "what if
// these jobs were gone?" on the ledger itself. Jobs keep what they hold
// on GPUs and hosts that became unhealthy (Allocate refuses those), so
// putting their claims back must not check health. Everything else is
// checked as Allocate checks it (capacity, CPU, memory, MIG slots), all or
// nothing, and an *AllocError says what failed; Generation does not
// advance. Use it only to restore what a trial released: it can put work
// on failed GPUs. Same cost as Allocate.
func (l *Ledger) TrialRestore(claims ...Claim) error {
	for ci := range claims {
		if err := l.restoreClaim(ci, &claims[ci]); err != nil {
			for j := ci - 1; j >= 0; j-- {
				l.undoClaim(&claims[j], len(claims[j].GPUs))
			}
			return err
		}
	}
	return nil
}

// restoreClaim is applyClaim without the health checks.
func (l *Ledger) restoreClaim(ci int, cl *Claim) error {
	h := cl.Host
	if h < 0 || int(h) >= len(l.c.hosts) {
		return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "host id %d out of range", h)
	}
	if cl.CPUMilli < 0 || cl.MemoryMiB < 0 {
		return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "negative CPU or memory")
	}
	if cl.CPUMilli > l.cpuFree[h] {
		return l.fail("allocate", ci, h, NoGPU, ErrNoCPU, "needs %d milli-cores, %d free", cl.CPUMilli, l.cpuFree[h])
	}
	if cl.MemoryMiB > l.memFree[h] {
		return l.fail("allocate", ci, h, NoGPU, ErrNoMemory, "needs %d MiB, %d free", cl.MemoryMiB, l.memFree[h])
	}
	for gi := range cl.GPUs {
		gc := cl.GPUs[gi]
		if gc.GPU < 0 || int(gc.GPU) >= len(l.gpu) || l.c.gpus[gc.GPU].host != h {
			l.undoClaimGPUs(cl, gi)
			return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "GPU id %d is not on host %s", gc.GPU, l.c.hosts[h].name)
		}
		if err := l.checkTake(ci, gc); err != nil {
			l.undoClaimGPUs(cl, gi)
			return err
		}
		l.apply(gc)
	}
	l.cpuFree[h] -= cl.CPUMilli
	l.memFree[h] -= cl.MemoryMiB
	l.bumpHost(h)
	return nil
}
