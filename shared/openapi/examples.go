package openapi

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
)

// Example is one request and its answer, as the README shows them.
type Example struct {
	Authorization string // the header's value
	Path          string
	Endpoint      catalog.Endpoint
	Request       string
	Status        int
	Answer        string
	// Headers are the example's other headers, each "Name: value".
	Headers []string
}

var claveField = regexp.MustCompile(`"CLAVE"\s*:\s*"([^"]*)"`)

func claveOf(body string) string {
	if m := claveField.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return "example"
}

// ExamplesFromREADME reads the README's curl examples and their answers, as
// the tests that replay them and the document's examples take them.
func ExamplesFromREADME(readme []byte) []Example {
	pair := regexp.MustCompile("(?s)```sh\ncurl -s -H 'Authorization: (Bearer \\S+)' -H 'Content-Type: application/json'((?: -H '[^']*')*) http://127.0.0.1:3000(/\\S+/(executequery|execute)) \\\\\n  -d '([^']*)'\n```\n```json\n(.*?)\n```")
	header := regexp.MustCompile(` -H '([^']*)'`)
	var out []Example
	for _, m := range pair.FindAllSubmatch(readme, -1) {
		status := 200
		var probe struct {
			CodError int `json:"cod_error"`
		}
		if json.Unmarshal(m[6], &probe) == nil && probe.CodError != 0 {
			status = erp.Code(probe.CodError).Status()
		}
		ex := Example{Authorization: string(m[1]), Path: string(m[3]), Endpoint: catalog.Endpoint(m[4]),
			Request: string(m[5]), Status: status, Answer: string(m[6])}
		for _, h := range header.FindAllSubmatch(m[2], -1) {
			ex.Headers = append(ex.Headers, string(h[1]))
		}
		out = append(out, ex)
	}
	return slices.Clip(out)
}
