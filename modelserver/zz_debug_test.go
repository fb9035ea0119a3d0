package modelserver

import (
	"fmt"
	"net/http"
	"testing"
)

func TestZZDebug(t *testing.T) {
	f := newFixture(t, `{"turns":[{"thinking":"hmm ok","text":"Hi there you","tools":[{"tool":"w","args":{"a":"{{CWD}}"}},{"tool":"apply_patch","args":"*** Begin"}]}]}`)
	for _, api := range allAPIs {
		f.srv.Reset()
		path, body := requestFor(api, true, reqOpts{tools: []testTool{{name: "w"}, {name: "apply_patch", custom: api == apiResponses}}})
		resp, data := f.do(t, http.MethodPost, path, body)
		fmt.Printf("==== %s %d %v\n%s\n", api, resp.StatusCode, resp.Header, data)
	}
	f.srv.Reset()
	for _, api := range allAPIs {
		f.srv.Reset()
		path, body := requestFor(api, false, reqOpts{tools: []testTool{{name: "w"}, {name: "apply_patch", custom: api == apiResponses}}})
		_, data := f.do(t, http.MethodPost, path, body)
		fmt.Printf("==== %s\n%s\n", api, data)
	}
	fmt.Println(f.log.b.String()[:600])
}
