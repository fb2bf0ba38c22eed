package simcli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
)

// mergeCmd builds "sim sweep merge": join the CSVs of a sharded sweep.
func mergeCmd() *cobra.Command {
	var out string
	var points int
	cmd := &cobra.Command{
		Use:   "merge SHARD.csv…",
		Short: "Join the CSVs of a sharded sweep into the unsharded sweep.csv",
		Long: `Join the sweep-i-of-n.csv files that "gpusched sim sweep --shard i/n" wrote
(one per Slurm array task or Kubernetes Indexed Job pod) into one CSV, rows in
run order: byte for byte what the unsharded sweep writes as sweep.csv.

It checks that every file has the same header, that every run is present
exactly once and in the shard its index belongs to (index mod n), that all n
shards are given when the file names say i-of-n, and, with --points, that
the grid had that many points; anything else is an error naming the file
and line.`,
		Example: `  gpusched sim sweep merge --out sweep.csv out-*/sweep-*-of-4.csv`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var buf bytes.Buffer
			if err := mergeSweeps(&buf, args, points); err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			runs := bytes.Count(buf.Bytes(), []byte("\n")) - 1 // less the header
			fmt.Fprintf(cmd.ErrOrStderr(), "sweep merge: %d runs from %d files written to %s\n", runs, len(args), out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the merged CSV here (default: standard output)")
	cmd.Flags().IntVar(&points, "points", 0, "the number of points of the grid, checked when > 0")
	return cmd
}

var shardName = regexp.MustCompile(`sweep-(\d+)-of-(\d+)\.csv$`)

// mergeSweeps writes the merged CSV of files to w (see mergeCmd).
func mergeSweeps(w io.Writer, files []string, points int) error {
	var header []string
	type row struct {
		rec  []string
		file string
		line int
	}
	byIndex := map[int]row{}
	shards := map[int]string{}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		si, sn := -1, 0
		if m := shardName.FindStringSubmatch(filepath.Base(f)); m != nil {
			si, _ = strconv.Atoi(m[1])
			sn, _ = strconv.Atoi(m[2])
			if sn < 1 || si >= sn {
				return fmt.Errorf("%s: shard %d of %d is not a shard", f, si, sn)
			}
			if n != 0 && sn != n {
				return fmt.Errorf("%s: a shard of %d, but %s is a shard of %d", f, sn, shards[0], n)
			}
			n = sn
			if prev, ok := shards[si]; ok {
				return fmt.Errorf("%s: shard %d given twice (also %s)", f, si, prev)
			}
			shards[si] = f
		}
		r := csv.NewReader(bytes.NewReader(data))
		r.ReuseRecord = false
		recs, err := r.ReadAll()
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("%s:1: empty file: want a sweep CSV with its header", f)
		}
		if header == nil {
			header = recs[0]
			if len(header) == 0 || header[0] != "run" {
				return fmt.Errorf("%s:1: the first column is %q, not run: not a sweep CSV", f, header[0])
			}
		} else if !slices.Equal(header, recs[0]) {
			return fmt.Errorf("%s:1: header differs from %s's: shards of different sweeps", f, files[0])
		}
		for k, rec := range recs[1:] {
			line := k + 2
			idx, err := strconv.Atoi(rec[0])
			if err != nil || idx < 0 {
				return fmt.Errorf("%s:%d: run %q is not a run index", f, line, rec[0])
			}
			if prev, ok := byIndex[idx]; ok {
				return fmt.Errorf("%s:%d: run %d already in %s:%d", f, line, idx, prev.file, prev.line)
			}
			if sn > 0 && idx%sn != si {
				return fmt.Errorf("%s:%d: run %d does not belong to shard %d of %d", f, line, idx, si, sn)
			}
			byIndex[idx] = row{rec, f, line}
		}
	}
	for i := 0; i < n; i++ {
		if _, ok := shards[i]; !ok {
			return fmt.Errorf("shard %d of %d is missing (want sweep-%d-of-%d.csv)", i, n, i, n)
		}
	}
	total := len(byIndex)
	if points > 0 && points != total {
		return fmt.Errorf("%d runs in the shards, --points says %d", total, points)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for i := 0; i < total; i++ {
		r, ok := byIndex[i]
		if !ok {
			return fmt.Errorf("run %d is missing (the shards hold %d runs, up to index %d)", i, total, maxKey(byIndex))
		}
		if err := cw.Write(r.rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func maxKey[V any](m map[int]V) int {
	k := -1
	for i := range m {
		k = max(k, i)
	}
	return k
}
