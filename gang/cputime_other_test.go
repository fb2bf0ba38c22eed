//go:build !linux

package gang

func threadCPU() int64 { return -1 }
