//go:build !race

package lines

const raceEnabled = false
