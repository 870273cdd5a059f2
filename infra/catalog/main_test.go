package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func TestFromDBDraftsTheDemoProcedures(t *testing.T) {
	data, err := json.Marshal(map[string]tenants.Instance{"demo": {Config: fbtest.Demo(t), AllowAnonymous: true}})
	if err != nil {
		t.Fatal(err)
	}
	instances := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(instances, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, notes bytes.Buffer
	if err := fromDB(context.Background(), []string{"-instances", instances, "-procedures", "REST_%"}, &out, &notes); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Operations []map[string]any `json:"operations"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	byClave := map[string]string{}
	for _, op := range doc.Operations {
		b, _ := json.Marshal(op)
		byClave[op["clave"].(string)] = string(b)
	}
	want := map[string][]string{
		"Get_Inventario_Precio": {`"endpoint":"executequery"`, `{"kind":"date","name":"FECHA_CORTE","required":true}`, `{"max_chars":20,"name":"REFERENCIA","required":true}`},
		"Set_Terceros":          {`"endpoint":"execute"`, `"read_back":{"params":["CODIGO"],"procedure":"REST_SELECT_TERCEROS"}`, `{"max_chars":15,"name":"CODIGO","required":true}`},
		"Set_Precio":            {`{"kind":"decimal","name":"PRECIO","precision":18,"required":true,"scale":4}`},
	}
	for clave, parts := range want {
		for _, p := range parts {
			if !strings.Contains(byClave[clave], p) {
				t.Errorf("%s: %s lacks %s", clave, byClave[clave], p)
			}
		}
	}
	if !strings.Contains(notes.String(), "Set_Precio: a write needs read_back") {
		t.Errorf("no note on the write without a read-back: %s", notes.String())
	}
	// Every entry but the write without a read-back is a valid catalog entry.
	var ops []json.RawMessage
	for _, op := range doc.Operations {
		if op["clave"] != "Set_Precio" {
			b, _ := json.Marshal(op)
			ops = append(ops, b)
		}
	}
	fixed, _ := json.Marshal(map[string]any{"operations": ops})
	if _, err := catalog.Decode(fixed); err != nil {
		t.Fatalf("the draft does not load: %v", err)
	}
}

func TestCheckNamesEntryAndField(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"operations":[{"clave":"Get_X","endpoint":"executequery","procedure":"P","params":[{"name":"A","kind":"integer","bits":8}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := check([]string{"../catalog.demo.json"}); err != nil {
		t.Fatal(err)
	}
	err := check([]string{"../catalog.demo.json", bad})
	if err == nil || !strings.Contains(err.Error(), `operations[0] "Get_X": params[0] "A": bits: 8 is not 16`) {
		t.Fatalf("got %v", err)
	}
}
