module github.com/nakagami/firebirdsql

go 1.22.0

toolchain go1.22.2

require (
	github.com/kardianos/osext v0.0.0-20190222173326-2bc1f35cddc0
	github.com/nakagami/chacha20 v0.1.0
	github.com/stretchr/testify v1.11.1
	gitlab.com/nyarla/go-crypt v0.0.0-20160106005555-d9a5dc2b789b
	golang.org/x/text v0.22.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
