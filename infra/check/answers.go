package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var numericScale = regexp.MustCompile(`^(NUMERIC|DECIMAL)\(\d+,(\d+)\)$`)

// found: HTTP 200, the answer fits its schema, keys in the procedure's
// order, exact numbers with their declared scale.
func (k *checker) found(ctx context.Context, body string) {
	clave, err := claveOf(body)
	if err != nil {
		k.report("found: "+body, err)
		return
	}
	name := clave + ": a record that exists"
	status, answer, err := k.post(ctx, "executequery", body, k.c.token)
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d: %.200s", status, answer)
	}
	if err == nil {
		err = k.fitsAnswer(clave, answer)
	}
	k.report(name, err)
	if err != nil {
		return
	}
	names, types := k.columns(clave)
	k.report(clave+": columns in the procedure's order", keyOrder(answer, names))
	k.report(clave+": NUMERIC columns keep their scale", scales(answer, names, types))
}

func (k *checker) fitsAnswer(clave string, answer []byte) error {
	s, err := k.schema(clave + ".answer")
	if err != nil {
		return fmt.Errorf("the document has no answer schema for %s: %w", clave, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(answer))
	if err != nil {
		return fmt.Errorf("not JSON: %.200s", answer)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("does not fit the document: %s", oneLine(err.Error()))
	}
	var a struct{ Data []json.RawMessage }
	if json.Unmarshal(answer, &a) != nil || len(a.Data) == 0 {
		return errors.New("no rows")
	}
	return nil
}

// rows gives each row's keys and raw values in the answer's order.
func rows(answer []byte) ([][]string, [][]string, error) {
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if !seekArray(dec, "data") {
		return nil, nil, errors.New("no data array")
	}
	var keys, values [][]string
	for dec.More() {
		var row []string
		var vals []string
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, nil, errors.New("a row is not an object")
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, nil, err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, nil, err
			}
			row, vals = append(row, t.(string)), append(vals, string(v))
		}
		dec.Token() //nolint:errcheck // the closing brace
		keys, values = append(keys, row), append(values, vals)
	}
	return keys, values, nil
}

func seekArray(dec *json.Decoder, key string) bool {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if t == key {
			t, err := dec.Token()
			return err == nil && t == json.Delim('[')
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

func keyOrder(answer []byte, names []string) error {
	keys, _, err := rows(answer)
	if err != nil {
		return err
	}
	for i, row := range keys {
		if strings.Join(row, ",") != strings.Join(names, ",") {
			return fmt.Errorf("row %d has keys %s; the procedure's order is %s", i+1, abbreviate(row), abbreviate(names))
		}
	}
	return nil
}

func scales(answer []byte, names, types []string) error {
	_, values, err := rows(answer)
	if err != nil {
		return err
	}
	for i, row := range values {
		for j, v := range row {
			if j >= len(types) || v == "null" {
				continue
			}
			m := numericScale.FindStringSubmatch(types[j])
			if m == nil {
				continue
			}
			scale, _ := strconv.Atoi(m[2])
			got := 0
			if _, frac, ok := strings.Cut(v, "."); ok {
				got = len(frac)
			}
			if got != scale {
				return fmt.Errorf("row %d: %s is %s, written with %d decimals; %s has %d (rounded through a float?)", i+1, names[j], v, got, types[j], scale)
			}
		}
	}
	return nil
}

// batch: the reads in one batch answer an array whose elements are the
// single answers, byte for byte.
func (k *checker) batch(ctx context.Context, bodies []string) {
	var singles [][]byte
	for _, body := range bodies {
		_, answer, err := k.post(ctx, "executequery", body, k.c.token)
		if err != nil {
			k.report("a batch of the reads above", err)
			return
		}
		singles = append(singles, answer)
	}
	status, answer, err := k.post(ctx, "executequery", "["+strings.Join(bodies, ",")+"]", k.c.token)
	want := append(append([]byte{'['}, bytes.Join(singles, []byte{','})...), ']')
	if err == nil && (status != 200 || !bytes.Equal(answer, want)) {
		err = fmt.Errorf("want HTTP 200 and each read's own answer, in order; got HTTP %d %.200s", status, answer)
	}
	k.report(fmt.Sprintf("a batch of the %d reads above, one answer each", len(bodies)), err)
}

// writeRoundTrip inserts a third party with Set_Terceros under an
// Idempotency-Key, checks the read-back fits its schema, that the same
// request with the key replays the answer byte for byte, and that the same
// insert without it is refused by the database. On an instance that does not
// keep keys it says so and writes without one.
func (k *checker) writeRoundTrip(ctx context.Context) {
	body := `{"CLAVE":"Set_Terceros","CODIGO":"` + k.c.write + `","DV":"0","NATURALEZA":"N","NOM1":"Contrato","APL1":"Prueba","RAZON_COMERCIAL":"Prueba de contrato","DIRECCION":"Calle 1","CODIDENTIDAD":"CC","CODSOCIEDAD":"PN","CODPAIS":"CO","CODMUNICIPIO":"11001"}`
	key := "make-check-" + k.c.write
	// A dry run and a refused batch first: if either wrote, the write
	// below would be refused.
	status, header, answer, err := k.postKeyed(ctx, "execute", body, k.c.token, "", "Prefer", "tx=rollback")
	if err == nil && (status != 200 || header.Get("Preference-Applied") != "tx=rollback") {
		err = fmt.Errorf("want HTTP 200 and Preference-Applied: tx=rollback; got HTTP %d (%q) %.200s", status, header.Get("Preference-Applied"), answer)
	}
	if err == nil {
		err = k.fitsAnswer("Set_Terceros", answer)
	}
	k.report("Set_Terceros: a dry run (Prefer: tx=rollback) answers and writes nothing", err)
	status, answer, err = k.post(ctx, "execute", "["+body+","+body+"]", k.c.token)
	var elems []struct {
		CodError erp.Code `json:"cod_error"`
		Ex       string   `json:"ex_execsql"`
	}
	if err == nil && (status != 200 || json.Unmarshal(answer, &elems) != nil || len(elems) != 2 || elems[0].CodError != erp.CodeRolledBack || elems[1].CodError != 0 || elems[1].Ex == "") {
		err = fmt.Errorf("want HTTP 200, the first call rolled back (%d) and the second the database's refusal; got HTTP %d %.300s", erp.CodeRolledBack, status, answer)
	}
	k.report("Set_Terceros twice in one batch: the second refused, nothing written", err)
	status, _, answer, err = k.postKeyed(ctx, "execute", body, k.c.token, key)
	var refusal struct {
		CodError erp.Code `json:"cod_error"`
	}
	keyed := true
	if err == nil && status == erp.CodeKeyNotEnabled.Status() && json.Unmarshal(answer, &refusal) == nil && refusal.CodError == erp.CodeKeyNotEnabled {
		k.report("Set_Terceros: Idempotency-Key refused (the instance does not keep keys; README.md#writes-that-are-safe-to-retry)", nil)
		keyed = false
		status, answer, err = k.post(ctx, "execute", body, k.c.token)
	}
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d: %.200s", status, answer)
	}
	if err == nil {
		err = k.fitsAnswer("Set_Terceros", answer)
	}
	k.report("Set_Terceros: a new third party, answered by its read-back", err)
	if keyed {
		again, header, replay, err := k.postKeyed(ctx, "execute", body, k.c.token, key)
		if err == nil && (again != 200 || !bytes.Equal(replay, answer) || header.Get("Idempotent-Replayed") != "true") {
			err = fmt.Errorf("want the first answer again with Idempotent-Replayed: true; got HTTP %d (%q) %.200s", again, header.Get("Idempotent-Replayed"), replay)
		}
		k.report("Set_Terceros: the same request with its Idempotency-Key replays the answer", err)
	}
	status, answer, err = k.post(ctx, "execute", body, k.c.token)
	if err == nil && (status != 200 || !bytes.Contains(answer, []byte(`"ex_execsql"`))) {
		err = fmt.Errorf("want the database's refusal, HTTP 200; got HTTP %d %.200s", status, answer)
	}
	k.report("Set_Terceros: the same again is the database's refusal", err)
}

func abbreviate(keys []string) string {
	if len(keys) > 4 {
		return strings.Join(keys[:4], ",") + ",…"
	}
	return strings.Join(keys, ",")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
