// Command executequery is the Lambda serving the read operations
// (POST .../executequery).
package main

import (
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/lambdafn"
)

// catalogB64 is the catalog make build writes into the binary (-ldflags -X,
// the file CATALOG names, gzipped, base64); empty: the specification's
// operations.
var catalogB64 string

func main() { lambdafn.Main(catalog.ExecuteQuery, catalogB64) }
