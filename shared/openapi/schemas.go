package openapi

// The schemas of one operation: its request, each parameter's value, its
// answer's rows, each column's value.

import (
	"fmt"
	"strings"

	"github.com/erp-gateway/gateway/shared/catalog"
)

var dateToken = strings.NewReplacer("DD", `\d{2}`, "MM", `\d{2}`, "YYYY", `\d{4}`, ".", `\.`)

func requestSchema(op *catalog.Operation) obj {
	required := []string{"CLAVE"}
	// The discriminator's value (oneValue).
	props := obj{{"CLAVE", oneValue(op.Clave)}}
	for _, p := range op.Params {
		if p.Required {
			required = append(required, p.Name)
		}
		props = append(props, kv{p.Name, paramSchema(p)})
	}
	return obj{
		{"type", "object"},
		{"required", required},
		{"additionalProperties", false},
		{"properties", props},
		{"x-procedure", op.Procedure},
	}
}

func paramSchema(p catalog.Param) obj {
	nullable := func(types ...string) any {
		if p.Required {
			if len(types) == 1 {
				return types[0]
			}
			return types
		}
		return append(types, "null")
	}
	absent := ""
	if !p.Required {
		absent = `|NA|`
	}
	switch p.Kind {
	case catalog.Date:
		return obj{{"type", nullable("string")}, {"pattern", "^(" + dateToken.Replace(p.Format) + absent + ")$"},
			{"description", "A date written " + p.Format + "; empty or NA: absent."}}
	case catalog.Integer:
		// Described as the string every generator takes and sends exactly;
		// the gateway also takes a JSON number.
		return obj{{"type", nullable("string")}, {"pattern", `^([+-]?\d+` + absent + `)$`}, {"format", fmt.Sprintf("int%d", p.Bits)},
			{"description", fmt.Sprintf("A whole number of %d bits, written as a string (a JSON number is taken too).", p.Bits)}}
	case catalog.Decimal:
		// As the gateway reads it: digits on at least one side of a point
		// that has some after it, as many whole digits as the greatest
		// value has (the range itself is the description's).
		least, greatest := p.Range()
		whole, _, _ := strings.Cut(greatest, ".")
		number := fmt.Sprintf(`0*\d{1,%d}`, len(whole))
		if p.Scale > 0 {
			number = fmt.Sprintf(`%s(\.\d{1,%d})?|\.\d{1,%d}`, number, p.Scale, p.Scale)
		}
		return obj{{"type", nullable("string")},
			{"pattern", fmt.Sprintf(`^([+-]?(%s)%s)$`, number, absent)}, {"format", "decimal"},
			{"description", fmt.Sprintf("NUMERIC(%d,%d), exact, from %s to %s: written as a string with a point (a JSON number is taken too, as written).", p.Precision, p.Scale, least, greatest)}}
	}
	return obj{{"type", nullable("string")}, {"maxLength", p.MaxLen}}
}

func answerSchema(op *catalog.Operation, procs map[string]catalog.Procedure) obj {
	name := op.Procedure
	if op.ReadBack != nil {
		name = op.ReadBack.Procedure
	}
	columns := obj{}
	var names []string
	for _, c := range procs[name].Outputs {
		columns = append(columns, kv{c.Name, columnSchema(c)})
		names = append(names, c.Name)
	}
	// Open to columns the ERP adds to a procedure later: a strict client
	// must not break that day.
	row := obj{{"type", "object"}, {"required", names}, {"properties", columns}}
	if len(names) == 0 {
		row = obj{{"type", "object"}}
	}
	return obj{
		{"type", "object"},
		{"required", []string{"cod_error", "data"}},
		{"additionalProperties", false},
		{"properties", obj{
			{"cod_error", obj{{"const", 0}}},
			{"data", obj{{"type", "array"}, {"maxItems", op.MaxRows}, {"items", row}}},
		}},
		{"x-procedure", name},
	}
}

// columnSchema: every output may be NULL (a procedure's outputs are not
// declared NOT NULL); x-firebird-type keeps the declared type, whose scale
// the contract check holds NUMERIC answers to.
func columnSchema(c catalog.DBParam) obj {
	t := func(typ string, more ...kv) obj {
		return append(obj{{"type", []string{typ, "null"}}, {"x-firebird-type", c.String()}}, more...)
	}
	switch c.Type {
	case "CHAR", "VARCHAR":
		if c.Charset == "OCTETS" {
			// Bytes, answered as a binary BLOB's are: in base64, four
			// characters for each three bytes or fewer.
			return t("string", kv{"contentEncoding", "base64"}, kv{"maxLength", (c.Chars + 2) / 3 * 4})
		}
		return t("string", kv{"maxLength", c.Chars})
	case "SMALLINT", "INTEGER", "BIGINT":
		return t("integer", kv{"format", fmt.Sprintf("int%d", c.Bits())})
	case "FLOAT":
		return t("number", kv{"format", "float"})
	case "DOUBLE PRECISION":
		if !c.Dialect1Numeric() {
			return t("number", kv{"format", "double"})
		}
		// Answered at its scale, as a NUMERIC is.
		fallthrough
	case "NUMERIC", "DECIMAL", "DECFLOAT(16)", "DECFLOAT(34)", "INT128":
		// A JSON number written exactly as the database holds it: format
		// decimal tells generators to decode it into a decimal type, not a
		// float that rounds past 15 digits; x-go-type does the same for
		// oapi-codegen, which knows no decimal format.
		return t("number", kv{"format", "decimal"}, kv{"x-go-type", "json.Number"},
			kv{"description", "Exact: decode into a decimal type (a float rounds past 15 significant digits)."})
	case "BOOLEAN":
		return t("boolean")
	case "DATE":
		return t("string", kv{"format", "date"})
	case "TIME", "TIME WITH TIME ZONE":
		return t("string", kv{"pattern", `^\d{2}:\d{2}:\d{2}(\.\d{1,4})?$`})
	case "TIMESTAMP", "TIMESTAMP WITH TIME ZONE":
		return t("string", kv{"pattern", `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,4})?$`})
	case "BLOB":
		if c.SubType == 0 {
			return t("string", kv{"contentEncoding", "base64"})
		}
		return t("string")
	}
	return obj{{"x-firebird-type", c.String()}}
}
