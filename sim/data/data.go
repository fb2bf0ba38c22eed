// Package data ships the trace the simulator runs by default: the Alibaba
// GPU cluster trace's openb_pod_list_default.csv (cluster-trace-gpu-v2023,
// from the public alibaba/clusterdata repository; Weng et al., USENIX
// ATC'23, "Beware of Fragmentation"), 8,152 tasks, embedded gzip-compressed.
// The matching cluster is topology.Preset("openb").
package data

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
)

//go:embed openb_pod_list_default.csv.gz
var openbDefaultGz []byte

// OpenBDefaultName is the file name of the embedded default pod list.
const OpenBDefaultName = "openb_pod_list_default.csv"

// OpenBDefault returns a reader of the embedded default pod list (CSV with
// a header row; read it with trace.NewOpenB). Each call returns a new
// reader.
func OpenBDefault() io.Reader {
	zr, err := gzip.NewReader(bytes.NewReader(openbDefaultGz))
	if err != nil {
		panic("sim/data: embedded trace is corrupt: " + err.Error())
	}
	return zr
}

//go:embed gpu-speeds-gavel.yaml
var gpuSpeedsGavel []byte

// GPUSpeedsGavelName is the file name of the embedded GPU speed table.
const GPUSpeedsGavelName = "gpu-speeds-gavel.yaml"

// GPUSpeedsGavel returns the embedded GPU speed table (read it with
// sim.ReadSpeedTable): per-model training throughput relative to the V100
// from Gavel's published single-GPU measurements (Narayanan et al.,
// OSDI'20; the file names its source), by default and per job class.
func GPUSpeedsGavel() io.Reader { return bytes.NewReader(gpuSpeedsGavel) }
