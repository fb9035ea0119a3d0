//go:build race

package lines

// raceEnabled: the race detector shadows memory, so RSS says nothing of the code.
const raceEnabled = true
