package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/fbtest"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// demoInstances is an instances file with the demo test database as demo.
func demoInstances(t *testing.T) string {
	t.Helper()
	data, err := json.Marshal(map[string]tenants.Instance{"demo": {Connection: fbtest.Demo(t)}})
	if err != nil {
		t.Fatal(err)
	}
	instances := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(instances, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return instances
}

func TestFromDBDraftsTheDemoProcedures(t *testing.T) {
	instances := demoInstances(t)
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
	// A write that returns values is answered by them, without a read-back.
	if !strings.Contains(byClave["Set_Pedido"], `"endpoint":"execute"`) || strings.Contains(byClave["Set_Pedido"], "read_back") {
		t.Errorf("Set_Pedido: %s", byClave["Set_Pedido"])
	}
	if !strings.Contains(notes.String(), "Set_Precio: answered by one empty row ({})") {
		t.Errorf("no note on the write without a read-back: %s", notes.String())
	}
	// Every entry is a valid catalog entry. (REST_TEST_ procedures are
	// other packages' fixtures, made in the same database while this test
	// runs.)
	var ops []json.RawMessage
	for _, op := range doc.Operations {
		if proc, _ := op["procedure"].(string); !strings.HasPrefix(proc, "REST_TEST_") {
			b, _ := json.Marshal(op)
			ops = append(ops, b)
		}
	}
	fixed, _ := json.Marshal(map[string]any{"operations": ops})
	if _, err := catalog.Decode(fixed); err != nil {
		t.Fatalf("the draft does not load: %v", err)
	}
}

// TestFromDBMatchesNamesAsSQLWould: an exact name (which the system
// table pads), in either case, and patterns in either case.
func TestFromDBMatchesNamesAsSQLWould(t *testing.T) {
	instances := demoInstances(t)
	tests := []struct {
		pattern string
		want    []string // the drafted CLAVEs, in the procedures' order
		err     string
	}{
		{pattern: "REST_SELECT_TERCEROS", want: []string{"Get_Terceros"}},
		{pattern: "rest_select_terceros", want: []string{"Get_Terceros"}},
		{pattern: "Rest_Select_T%", want: []string{"Get_Terceros"}},
		{pattern: "rest_insert_%", want: []string{"Set_Pedido", "Set_Pedido_Linea", "Set_Precio", "Set_Terceros"}},
		{pattern: "rest_%", want: []string{"Get_Gestion_Primario", "Get_Inventario_Precio", "Get_Referencia", "Get_Terceros"}},
		{pattern: `rest\_select\_terceros`, want: []string{"Get_Terceros"}},
		// _ is any character, \_ an underscore alone.
		{pattern: `REST_SELECT_TERCERO_`, want: []string{"Get_Terceros"}},
		{pattern: `REST\_SELECT\_TERCERO\_`, err: `no procedure of instance demo matches`},
		{pattern: "REST_SELECT_PAGO", err: `no procedure of instance demo matches "REST_SELECT_PAGO"`},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			var out, notes bytes.Buffer
			err := fromDB(context.Background(), []string{"-instances", instances, "-procedures", tt.pattern}, &out, &notes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc catalog.File
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("not a catalog file: %v\n%s", err, out.String())
			}
			got := map[string]bool{}
			for _, op := range doc.Operations {
				got[op.Clave] = true
			}
			for _, clave := range tt.want {
				if !got[clave] {
					t.Errorf("%s not drafted: %s", clave, out.String())
				}
			}
			// Exact names and narrow patterns draft those alone; rest_%
			// also finds other tests' procedures.
			if strings.ToUpper(tt.pattern) != "REST_%" && len(got) != len(tt.want) {
				t.Errorf("drafted %v, want %v", got, tt.want)
			}
		})
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

func TestDoctorTranscript(t *testing.T) {
	instances, dir := demoInstances(t), t.TempDir()
	var out bytes.Buffer
	if err := doctor(context.Background(), []string{"-instances", instances, "-catalog", "../catalog.demo.json"}, &out); err != nil || out.String() != "checking the catalog ../catalog.demo.json\ndemo: ok (9 operations, 9 procedures)\n" {
		t.Fatalf("%v: %s", err, out.String())
	}
	broken := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(broken, []byte(`{"operations":[{"clave":"Get_Saldo","endpoint":"executequery","procedure":"REST_SELECT_SALDO","params":[{"name":"CODIGO","max_chars":15}]},
		{"clave":"Get_Gestion_Primario","endpoint":"executequery","procedure":"REST_SELECT_GESTION_PRIMARIO","params":[{"name":"TIPO","max_chars":5},{"name":"NUMERO","max_chars":5}]},
		{"clave":"Get_Terceros","endpoint":"executequery","procedure":"REST_SELECT_TERCEROS","params":[{"name":"CODIGO","max_chars":12}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := doctor(context.Background(), []string{"-instances", instances, "-catalog", broken}, &out)
	want := "checking the catalog " + broken + "\n" +
		"demo: FATAL: REST_SELECT_GESTION_PRIMARIO (Get_Gestion_Primario): the database declares 3 input parameters, the catalog 2: the catalog has no parameter for P_PREFIJO\n" +
		"demo: FATAL: REST_SELECT_SALDO (Get_Saldo): the procedure does not exist in the database\n" +
		"demo: warning: REST_SELECT_TERCEROS (Get_Terceros): input P_CODIGO is VARCHAR(15) in the database, the catalog allows 12 characters\n"
	if !errors.Is(err, errFindings) || out.String() != want {
		t.Fatalf("%v:\n%s\nwant:\n%s", err, out.String(), want)
	}
	// Without the grant that lets it cancel orphans, a warning: nothing
	// fails for want of it.
	fbtest.Setup(t, fbtest.Demo(t), "REVOKE DELETE ON MON$ATTACHMENTS FROM USER GATEWAY")
	t.Cleanup(func() { fbtest.Setup(t, fbtest.Demo(t), "GRANT DELETE ON MON$ATTACHMENTS TO USER GATEWAY") })
	out.Reset()
	err = doctor(context.Background(), []string{"-instances", instances, "-catalog", "../catalog.demo.json"}, &out)
	want = "checking the catalog ../catalog.demo.json\n" +
		"demo: warning: MON$ATTACHMENTS may not be used by GATEWAY: GRANT DELETE ON MON$ATTACHMENTS TO GATEWAY; without it the gateway cannot cancel the attachments a cut link leaves behind, which keep their transactions and locks until the server's TCP keepalive gives up (about 2 hours)\n"
	if err != nil || out.String() != want {
		t.Fatalf("without the grant: %v:\n%s\nwant:\n%s", err, out.String(), want)
	}
}

// TestKeptPrintsTheAnswerAsJSON: make kept shows a DBA the answer a client
// got, from either form of the key's row.
func TestKeptPrintsTheAnswerAsJSON(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.KeyTable(t, cfg)
	admin := fbtest.Open(t, fbtest.Admin(t, cfg))
	key := fmt.Sprintf("kept-tool-%d", time.Now().UnixNano())
	for scope, answer := range map[string]string{"a": "K1;t6:CODIGOi5:VECES3:abc1:2", "b": `{"cod_error":0,"data":[]}`} {
		if _, err := admin.Exec(`INSERT INTO GATEWAY_IDEMPOTENCY (SCOPE, IDEM_KEY, CLAVE, REQUEST_HASH, ANSWER, CREATED_AT) VALUES (?, ?, 'Set_Pago', 'h', ?, CURRENT_TIMESTAMP)`, scope, key, []byte(answer)); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := kept(context.Background(), []string{"-instances", demoInstances(t), "-instance", "demo", "-key", key}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "# scope a, key "+key+", CLAVE Set_Pago, kept ") ||
		lines[1] != `{"cod_error":0,"data":[{"CODIGO":"abc","VECES":2}]}` || lines[3] != `{"cod_error":0,"data":[]}` {
		t.Fatalf("printed:\n%s", out.String())
	}
	if err := kept(context.Background(), []string{"-instances", demoInstances(t), "-instance", "demo", "-key", "nothing-" + key}, &out); err == nil {
		t.Fatal("no error for a key nothing is kept under")
	}
}

// TestDemoKeyTableIsTheGatewaysOwn: the key table infra/firebird.sh creates
// in the demo database is what make idempotency-sql prints for its user.
func TestDemoKeyTableIsTheGatewaysOwn(t *testing.T) {
	file, err := os.ReadFile("../sql/idempotency.sql")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := idempotencySQL([]string{"-user", "GATEWAY"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(file) {
		t.Fatalf("infra/sql/idempotency.sql is not make idempotency-sql's (run it again):\n%s", out.String())
	}
}

// TestAddingAClave is the operator's guide's recipe, "Adding a CLAVE": a
// procedure created and granted on the demo database, its entry drafted into
// the demo catalog (kept as it is), the result checked and doctored clean.
func TestAddingAClave(t *testing.T) {
	cfg := fbtest.Demo(t)
	fbtest.Setup(t, cfg,
		`CREATE OR ALTER PROCEDURE REST_SELECT_LINEAS (P_CODLINEA VARCHAR(5)) RETURNS (CODIGO CHAR(20), NOMBRE VARCHAR(80)) AS
		BEGIN
		  FOR SELECT R.CODIGO, R.NOMBRE FROM REFERENCIAS R WHERE R.CODLINEA = :P_CODLINEA ORDER BY R.CODIGO INTO :CODIGO, :NOMBRE DO SUSPEND;
		END`,
		"GRANT SELECT ON REFERENCIAS TO PROCEDURE REST_SELECT_LINEAS",
		"GRANT EXECUTE ON PROCEDURE REST_SELECT_LINEAS TO GATEWAY")
	instances := demoInstances(t)
	var out, notes bytes.Buffer
	if err := fromDB(context.Background(), []string{"-instances", instances, "-procedures", "REST_SELECT_LINEAS", "-merge", "../catalog.demo.json"}, &out, &notes); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.LoadFile(file)
	if err != nil {
		t.Fatalf("the merged catalog does not load: %v\n%s", err, out.String())
	}
	demo, err := catalog.LoadFile("../catalog.demo.json")
	if err != nil {
		t.Fatal(err)
	}
	op, ok := cat.Lookup("Get_Lineas")
	if !ok || op.Procedure != "REST_SELECT_LINEAS" || len(cat.Claves()) != len(demo.Claves())+1 {
		t.Fatalf("merged: %v (%d operations, the demo's %d)\n%s", cat.Claves(), len(cat.Claves()), len(demo.Claves()), out.String())
	}
	var doc bytes.Buffer
	if err := doctor(context.Background(), []string{"-instances", instances, "-catalog", file}, &doc); err != nil || !strings.Contains(doc.String(), "demo: ok (10 operations, 10 procedures)") {
		t.Fatalf("doctor: %v\n%s", err, doc.String())
	}
}
