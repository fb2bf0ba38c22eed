package kube

import (
	"math/big"

	"github.com/gpusched/gpusched/internal/quantity"
)

// parseQuantity reads a Kubernetes resource quantity ("8", "500m",
// "64Gi", "1.5", "1e3", "100M") as an exact rational (quantity.Parse).
func parseQuantity(s string) (*big.Rat, error) { return quantity.Parse(s) }

// scaled returns r × num / den rounded down, and whether it was exact.
func scaled(r *big.Rat, num, den int64) (int64, bool) { return quantity.Scaled(r, num, den) }
