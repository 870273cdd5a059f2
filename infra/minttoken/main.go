// Command minttoken mints a bearer token for one instance and prints the hash
// to add to that instance's document ("tokens"). The token is shown once;
// only the hash is stored.
package main

import (
	"fmt"
	"os"

	"github.com/erp-gateway/gateway/shared/tenants"
)

func main() {
	token, err := tenants.NewToken()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("token (give it to the integrator; it is not stored anywhere): %s\n", token)
	fmt.Printf("hash  (add it to the instance document's \"tokens\"):          %s\n", tenants.HashToken(token))
}
