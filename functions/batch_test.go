package functions_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestBatchesThroughTheBootstraps: a document (a batch on execute) through
// the real execute bootstrap, written whole or, with a refused line, not at
// all; and a batch of reads through the real executequery bootstrap.
func TestBatchesThroughTheBootstraps(t *testing.T) {
	instances := environ(inline(t, nil))
	admin := fbtest.Open(t, fbtest.Admin(t, fbtest.Demo(t)))
	write, srvW := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "execute"), strings.TrimPrefix(srvW.URL, "http://"), append(instances, "GATEWAY_CATALOG="+demoCatalog)...)
	read, srvR := newRuntimeAPI(t)
	startBootstrap(t, buildBootstrap(t, "executequery"), strings.TrimPrefix(srvR.URL, "http://"), append(instances, "GATEWAY_CATALOG="+demoCatalog)...)

	code := fmt.Sprintf("D%d", time.Now().UnixNano()%1e12)
	resp := write.invoke2(t, apiPath+"execute", fbtest.Document(code))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Body, `[{"cod_error":0,"data":[{"CODIGO":"`+code+`"`) || strings.Contains(resp.Body, `"cod_error":15`) {
		t.Fatalf("a document: HTTP %d %s", resp.StatusCode, resp.Body)
	}
	if orders, lines := fbtest.DocumentRows(t, admin, code); orders != 1 || lines != 2 {
		t.Fatalf("%d orders and %d lines, want 1 and 2", orders, lines)
	}
	refused := fmt.Sprintf("E%d", time.Now().UnixNano()%1e12)
	resp = write.invoke2(t, apiPath+"execute", strings.Replace(fbtest.Document(refused), `"REF0002"`, `"NOPE"`, 1))
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"cod_error":1501`) || !strings.Contains(resp.Body, "LA REFERENCIA NOPE NO EXISTE") {
		t.Fatalf("a refused document: HTTP %d %s", resp.StatusCode, resp.Body)
	}
	if n := fbtest.ThirdParties(t, admin, refused); n != 0 {
		t.Errorf("a refused document wrote its third party %d times", n)
	}
	resp = read.invoke2(t, apiPath+"executequery", `[{"CLAVE":"Get_Terceros","CODIGO":"`+code+`"},{"CLAVE":"Get_Referencias","CODIGO":"NADA"}]`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Body, `[{"cod_error":0,"data":[{"CODIGO":"`+code+`"`) || !strings.Contains(resp.Body, `"cod_error":0,"ex_execsql"`) {
		t.Fatalf("a batch of reads: HTTP %d %s", resp.StatusCode, resp.Body)
	}
}
