// Command execute is the Lambda serving the write operations
// (POST .../execute).
package main

import (
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/lambdafn"
)

// catalogB64 is the catalog make build writes into the binary (-ldflags -X,
// the file CATALOG names, gzipped, base64); empty: the specification's
// operations.
var catalogB64 string

func main() { lambdafn.Main(catalog.Execute, catalogB64) }
