//go:build race

package jsonrpc

// raceEnabled shrinks the huge-line test under -race, where encoding/json's
// per-byte scanner is ~15x slower; the code path is the same.
const raceEnabled = true
