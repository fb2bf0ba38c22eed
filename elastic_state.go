package gpusched

// saveResizes fills st.Resizes (Resizes).
func (s *Scheduler) saveResizes(st *State) { st.Resizes = s.Resizes() }

// restoreResizes restores st.Resizes, after the jobs (RestoreResize).
func (s *Scheduler) restoreResizes(st *State) error {
	return restoreEach(st, "resizes", st.Resizes, func(r Resize) string { return r.Job }, s.RestoreResize)
}
