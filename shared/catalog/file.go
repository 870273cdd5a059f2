package catalog

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// defaultJSON is the specification's four operations, the catalog served
// when a deployment names none.
//
//go:embed default.json
var defaultJSON []byte

// Default is the catalog of the specification.
func Default() *Catalog {
	c, err := Decode(defaultJSON)
	if err != nil {
		panic(err) // embedded and covered by a test
	}
	return c
}

// DefaultOperations returns a fresh copy of the specification's operations,
// for a test that adds its own.
func DefaultOperations() []Operation {
	ops, err := decodeOperations(defaultJSON)
	if err != nil {
		panic(err) // embedded and covered by a test
	}
	return ops
}

// LoadFile reads a catalog file (infra/docs/catalog.md#the-catalog). Its errors name the
// file, the entry and the field.
func LoadFile(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	return c, nil
}

// Decode reads a catalog from its JSON.
func Decode(data []byte) (*Catalog, error) {
	ops, err := decodeOperations(data)
	if err != nil {
		return nil, err
	}
	return New(ops)
}

// File is the catalog file's shape, as Decode reads it and Encode writes it
// (make catalog-from-db drafts one); catalog.schema.json describes the same.
// A File need not be a valid catalog: a draft may lack what only an operator
// can say.
type (
	File struct {
		Schema     string          `json:"$schema,omitempty"`
		Comment    string          `json:"$comment,omitempty"`
		Operations []FileOperation `json:"operations"`
	}
	FileOperation struct {
		Comment   string        `json:"$comment,omitempty"`
		Clave     string        `json:"clave"`
		Endpoint  Endpoint      `json:"endpoint"`
		Procedure string        `json:"procedure"`
		Params    []FileParam   `json:"params"`
		ReadBack  *FileReadBack `json:"read_back,omitempty"`
		MaxRows   int           `json:"max_rows,omitempty"`
	}
	FileReadBack struct {
		Procedure string   `json:"procedure"`
		Params    []string `json:"params"`
	}
	FileParam struct {
		Comment  string `json:"$comment,omitempty"`
		Name     string `json:"name"`
		Kind     Kind   `json:"kind,omitempty"`
		MaxChars int    `json:"max_chars,omitempty"`
		Required bool   `json:"required"`
		Format   string `json:"format,omitempty"`
		Bits     int    `json:"bits,omitempty"`
		// Pointers: a decimal's scale may be 0, and must be written.
		Precision *int `json:"precision,omitempty"`
		Scale     *int `json:"scale,omitempty"`
	}
)

// Encode writes f as a catalog file: indented, and with <, > and & as they
// are, since operators read it.
func (f *File) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(f)
}

// decodeOperations decodes entry by entry, so that an error names the entry
// and the field it is in.
func decodeOperations(data []byte) ([]Operation, error) {
	// Read raw first, entry by entry: the outer fields shadow the embedded
	// ones of the same name.
	var f struct {
		File
		Operations []json.RawMessage `json:"operations"`
	}
	if err := strict(data, &f, "$schema", "$comment", "operations"); err != nil {
		return nil, err
	}
	if len(f.Operations) == 0 {
		return nil, errors.New("operations: the catalog has none")
	}
	ops := make([]Operation, len(f.Operations))
	for i, raw := range f.Operations {
		var fo struct {
			FileOperation
			Params []json.RawMessage `json:"params"`
		}
		if err := strict(raw, &fo, "$comment", "clave", "endpoint", "procedure", "params", "read_back", "max_rows"); err != nil {
			return nil, fmt.Errorf("operations[%d]%s: %w", i, claveOf(raw), err)
		}
		if fo.MaxRows == 0 && has(raw, "max_rows") {
			return nil, fmt.Errorf("operations[%d] %q: max_rows: must be at least 1 (leave it out for the default, %d)", i, fo.Clave, DefaultMaxRows)
		}
		op := Operation{Clave: fo.Clave, Endpoint: fo.Endpoint, Procedure: fo.Procedure, MaxRows: fo.MaxRows}
		if fo.ReadBack != nil {
			op.ReadBack = &ReadBack{Procedure: fo.ReadBack.Procedure, Params: fo.ReadBack.Params}
		}
		for j, rawParam := range fo.Params {
			var fp FileParam
			if err := strict(rawParam, &fp, "$comment", "name", "kind", "max_chars", "required", "format", "bits", "precision", "scale"); err != nil {
				return nil, fmt.Errorf("operations[%d] %q: params[%d]: %w", i, fo.Clave, j, err)
			}
			if field := misplaced(rawParam, cmp.Or(fp.Kind, Text)); field != "" {
				return nil, fmt.Errorf("operations[%d] %q: params[%d] %q: %s: a parameter of kind %s has none", i, fo.Clave, j, fp.Name, field, cmp.Or(fp.Kind, Text))
			}
			if fp.Kind == Decimal && (fp.Precision == nil || fp.Scale == nil) {
				return nil, fmt.Errorf("operations[%d] %q: params[%d] %q: precision, scale: a decimal parameter needs both, as in NUMERIC(precision, scale)", i, fo.Clave, j, fp.Name)
			}
			op.Params = append(op.Params, Param{Name: fp.Name, Kind: fp.Kind, MaxLen: fp.MaxChars, Required: fp.Required,
				Format: fp.Format, Bits: fp.Bits, Precision: deref(fp.Precision), Scale: deref(fp.Scale)})
		}
		ops[i] = op
	}
	return ops, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// kindFields are the fields each kind of parameter may have besides $comment,
// name, kind and required.
var kindFields = map[Kind][]string{
	Text: {"max_chars"}, Date: {"format"}, Integer: {"bits"}, Decimal: {"precision", "scale"},
}

// misplaced names a field the parameter's kind does not take, if present
// (even as 0 or "").
func misplaced(raw json.RawMessage, kind Kind) string {
	own, ok := kindFields[kind]
	if !ok {
		return "" // an unknown kind is reported by New
	}
	for _, field := range []string{"max_chars", "format", "bits", "precision", "scale"} {
		if has(raw, field) && !slices.Contains(own, field) {
			return field
		}
	}
	return ""
}

func has(raw json.RawMessage, field string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[field]
	return ok
}

// strict decodes one JSON object into v, refusing fields other than those
// named (exactly: encoding/json alone matches names without regard to case),
// nulls, and anything after the object.
func strict(data []byte, v any, fields ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err == nil {
		for name, value := range m {
			if !slices.Contains(fields, name) {
				return fmt.Errorf("unknown field %q", name)
			}
			if string(value) == "null" {
				return fmt.Errorf("%s: null is not a value here; leave the field out", name)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fmt.Errorf("not valid JSON at byte %d: %w", syn.Offset, err)
		case errors.As(err, &typ):
			// The path names the embedded type decodeOperations shadows
			// fields of; the file has no such level.
			field := strings.TrimPrefix(strings.TrimPrefix(typ.Field, "File."), "FileOperation.")
			return fmt.Errorf("%s: %s where %s belongs", field, typ.Value, typ.Type)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return errors.New("not valid JSON: it ends too early")
		}
		return err // "json: unknown field ..." names the field
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// claveOf finds an entry's clave for an error message, if it has one.
func claveOf(raw json.RawMessage) string {
	var named struct {
		Clave string `json:"clave"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Clave == "" {
		return ""
	}
	return fmt.Sprintf(" %q", named.Clave)
}
