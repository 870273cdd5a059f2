// Command executequery is the Lambda serving the read operations
// (POST .../executequery).
package main

import (
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/lambdafn"
)

func main() { lambdafn.Main(catalog.ExecuteQuery) }
