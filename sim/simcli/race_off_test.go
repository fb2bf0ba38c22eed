//go:build !race

package simcli

const raceEnabled = false
