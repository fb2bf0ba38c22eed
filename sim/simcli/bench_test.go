package simcli

import (
	"testing"
)

// BenchmarkDefault runs `gpusched sim` with no arguments (three policies
// on the built-in openb default, table and plots).
func BenchmarkDefault(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		cmd := Command(Options{})
		cmd.SetArgs([]string{"--out", dir, "--quiet"})
		cmd.SetOut(discard{})
		cmd.SetErr(discard{})
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
	}
}
