package main

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func (k *checker) schema(name string) (*jsonschema.Schema, error) {
	return k.schemas.Compile("https://erp-gateway.example/openapi.json#/components/schemas/" + name)
}

// columns is a schema's row properties in the document's order, with each
// one's declared Firebird type.
func (k *checker) columns(clave string) (names, types []string) {
	// The document's key order is the columns' order: read it with a
	// decoder that keeps it.
	dec := json.NewDecoder(bytes.NewReader(k.raw))
	path := []string{"components", "schemas", clave + ".answer", "properties", "data", "items", "properties"}
	if !seek(dec, path) {
		return nil, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return names, types
		}
		name, _ := tok.(string)
		var col struct {
			Type string `json:"x-firebird-type"`
		}
		if dec.Decode(&col) != nil {
			return names, types
		}
		names, types = append(names, name), append(types, col.Type)
	}
	return names, types
}

// seek moves dec into the object at path.
func seek(dec *json.Decoder, path []string) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for len(path) > 0 {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		key, ok := t.(string)
		if !ok {
			return false
		}
		if key != path[0] {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		path = path[1:]
	}
	return true
}
