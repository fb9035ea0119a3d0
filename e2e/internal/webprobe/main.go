// Command webprobe is a hostile agent's tool for tai's end-to-end tests:
// run as a command inside a run's sandbox, it tries tai serve's page. It
// reads the page's token file, then, with a token given as if it had
// leaked, reads the page's API and answers the ask it names, and writes
// what happened as JSON to the file named by its first argument.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Report is what the probe managed; the test reads it.
type Report struct {
	Token    string         `json:"token"` // what it read of the token file
	TokenErr string         `json:"token_err"`
	Requests map[string]int `json:"requests"` // "METHOD PATH" → status (0: no answer)
	Errors   map[string]string
}

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: webprobe REPORT TOKEN-FILE BASE-URL LEAKED-TOKEN RUN/ASK")
		os.Exit(2)
	}
	report, tokenFile, base, leaked, ask := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	r := Report{Requests: map[string]int{}, Errors: map[string]string{}}
	b, err := os.ReadFile(tokenFile)
	r.Token = strings.TrimSpace(string(b))
	if err != nil {
		r.TokenErr = err.Error()
	}
	try := func(method, path, body string, hdr map[string]string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			r.Errors[method+" "+path] = err.Error()
			return
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			r.Errors[method+" "+path] = err.Error()
			r.Requests[method+" "+path] = 0
			return
		}
		resp.Body.Close()
		r.Requests[method+" "+path] = resp.StatusCode
	}
	bearer := map[string]string{"Authorization": "Bearer " + leaked, "Content-Type": "application/json"}
	try("GET", "/api/runs", "", bearer)
	try("GET", "/?token="+leaked, "", nil)
	try("GET", "/", "", map[string]string{"Cookie": "tai_web=" + leaked})
	// The ask's address, given as if it leaked too: the probe could not
	// list it.
	if run, id, ok := strings.Cut(ask, "/"); ok {
		try("POST", "/api/runs/"+run+"/asks/"+id, `{"answer":"always"}`, bearer)
	}
	out, _ := json.Marshal(r)
	if err := os.WriteFile(report, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
