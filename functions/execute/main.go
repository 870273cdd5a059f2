// Command execute is the Lambda serving the write operations
// (POST .../execute).
package main

import (
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/lambdafn"
)

func main() { lambdafn.Main(catalog.Execute) }
