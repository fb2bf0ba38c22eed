// Package devname orders device names as people number them: gpu-2
// before gpu-10. The DRA importer and the kube-scheduler plugin number a
// node's GPUs known by name only in this order.
package devname

import "strings"

// Compare orders device names naturally: runs of digits
// compare as numbers (gpu-2 before gpu-10, gpu-3-mig-…-4 before
// gpu-3-mig-…-10), the rest byte by byte; of two names equal so, the one
// with more leading zeros comes later, then strings.Compare decides. It
// returns -1, 0 or +1, as cmp.Compare does. Devices known by their names
// only are numbered in this order (NVIDIA names GPUs gpu-<minor>: a node
// of more than ten GPUs would otherwise put gpu-10 before gpu-2). It
// allocates nothing; O(len(a)+len(b)).
func Compare(a, b string) int {
	zeros := 0 // > 0: a has more leading zeros in the first run that differs so
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if !isDigit(ca) || !isDigit(cb) {
			if ca != cb {
				if ca < cb {
					return -1
				}
				return 1
			}
			i, j = i+1, j+1
			continue
		}
		// Two runs of digits: without leading zeros, the longer is the
		// larger number, else the first digit that differs decides.
		za, zb := i, j
		for za < len(a) && a[za] == '0' {
			za++
		}
		for zb < len(b) && b[zb] == '0' {
			zb++
		}
		ea, eb := za, zb
		for ea < len(a) && isDigit(a[ea]) {
			ea++
		}
		for eb < len(b) && isDigit(b[eb]) {
			eb++
		}
		if la, lb := ea-za, eb-zb; la != lb {
			if la < lb {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a[za:ea], b[zb:eb]); c != 0 {
			return c
		}
		if zeros == 0 && za-i != zb-j {
			zeros = 1
			if za-i < zb-j {
				zeros = -1
			}
		}
		i, j = ea, eb
	}
	switch {
	case len(a)-i < len(b)-j:
		return -1
	case len(a)-i > len(b)-j:
		return 1
	case zeros != 0:
		return zeros
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
