// Command barecli runs the bare ACP client on an agent command line: for
// interleaved wall-time comparisons with tai run outside go test.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/tai-dev/tai/internal/bareacp"
)

func main() {
	t := time.Now()
	r, err := bareacp.Client(dir(), os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d updates %.1f ms\n", r.Updates, float64(time.Since(t).Microseconds())/1e3)
}

func dir() string {
	d, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return d
}
