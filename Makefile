# Two commands first: `make run` (demo ERP + local server) and `make test`.
SHELL := /bin/bash
ADDR ?= 127.0.0.1:3000
INSTANCES ?= infra/instances.demo.json
# The tools are built, then run: go run would add its "exit status 1" to a
# tool's own one-line error.
TOOL = go build -o bin/tools/ ./infra/$(1) && bin/tools/$(1)
# With the demo's instances file, the tools that check CLAVEs take the demo's
# catalog, as make run serves it, unless CATALOG says otherwise; make build and
# make deploy never do.
DEMO_CATALOG := infra/catalog.demo.json
TOOLS_CATALOG = $(or $(CATALOG),$(if $(filter infra/instances.demo.json,$(INSTANCES)),$(DEMO_CATALOG)))
# Minting reads no instances file: the demo's catalog for the demo instance.
TOKEN_CATALOG = $(or $(CATALOG),$(if $(filter demo,$(INSTANCE)),$(DEMO_CATALOG)))
# The demo key is public: make run uses it; make serve needs ACCESS=file.
DEMO_ACCESS := infra/access.demo.json
DEMO_SIGNING_KEY := infra/signing-key.demo.json
FB := infra/firebird.sh
FB_DATA ?= /var/lib/firebird/3.0/data
DEMO_URL := http://$(ADDR)/demo/RestServerIsapi.dll/api/v1/TServiceRestInterface
# The demo instance's token, minted with infra/signing-key.demo.json (public).
DEMO_TOKEN := erpgw_demo_3999776004efd43ca5ca39186f4b49f5_mAliZOWh_OsfcW0aZtBc_yS_VorP-s__q7sEhLp-KQX2q8Xr-AnyGe1K1NvIlIvt73BF0Pme7RHr3GzFI4W_Ag

# The test databases are recreated on every run; tests read where they are here.
export FB_TEST_HOST ?= 127.0.0.1
export FB_TEST_DEMO_DB ?= $(FB_DATA)/erp_test.fdb
export FB_TEST_OTHER_DB ?= $(FB_DATA)/erp_other_test.fdb
export FB_TEST_DIALECT1_DB ?= $(FB_DATA)/erp_dialect1_test.fdb
export FB_TEST_USER ?= GATEWAY
export FB_TEST_PASSWORD ?= gateway-demo
export FB_TEST_READER_USER ?= GATEWAY_READER
export FB_TEST_READER_PASSWORD ?= reader-demo

.DEFAULT_GOAL := help
help:
	@echo "make run | make test | make serve ADDR=host:port INSTANCES=file ACCESS=file [BASE_PATH=/erp] | make bench | make lint"
	@echo "make roundtrips | make coldstart | make load | make fuzz [FUZZTIME=30s] | make build [CATALOG=file] | make deploy | make local-api | make token INSTANCE=name [SIGNING_KEY=file] [ACCESS=file|ACCESS_SECRET=id] [READ_ONLY=1] [CLAVES=a,b] [EXPIRES=YYYY-MM-DD|never] | make token-key [ID=id] | make demo-reset   (infra/README.md)"
	@echo "make openapi | make check | make doctor | make catalog-from-db | make idempotency-sql [USER=GATEWAY] | make kept INSTANCE=name KEY=key   (infra/docs/catalog.md)"

# Mint a bearer token for INSTANCE with a signing key: a file (SIGNING_KEY,
# the demo's by default) or, with SIGNING_KEY_SECRET=id, a secret the
# functions cannot read. READ_ONLY=1, CLAVES=a,b (checked against
# CATALOG=file, else the demo's for INSTANCE=demo and the built-in one for
# any other) and EXPIRES=YYYY-MM-DD limit the
# token (a year when not given; EXPIRES=never for none; infra/docs/configuration.md, "Tokens").
# ACCESS=file or ACCESS_SECRET=id: check the token with that access document.
token:
	@$(call TOOL,minttoken) -instance '$(INSTANCE)' $(if $(SIGNING_KEY_SECRET),-signing-key-secret '$(SIGNING_KEY_SECRET)',-signing-key '$(or $(SIGNING_KEY),$(DEMO_SIGNING_KEY))') \
		$(if $(READ_ONLY),-read-only) $(if $(CLAVES),-claves '$(CLAVES)') $(if $(EXPIRES),-expires '$(EXPIRES)') $(if $(TOKEN_CATALOG),-catalog '$(TOKEN_CATALOG)') \
		$(if $(ACCESS),-access '$(ACCESS)') $(if $(ACCESS_SECRET),-access-secret '$(ACCESS_SECRET)')

# A new signing key, ID=its id (a date, say), and the public key the access
# document holds for it (rotation: infra/docs/configuration.md, "Tokens").
token-key:
	@$(call TOOL,minttoken) -new-key '$(or $(ID),$(shell date -u +%Y-%m-%d-%H%M))'

.PHONY: help fuzz coldstart roundtrips token token-key load-neighbour load-slow run serve test bench load lint demo-db demo-reset firebird test-db build deploy local-api build-ExecuteQueryFunction build-ExecuteFunction build-ExecuteQueryHookFunction build-ExecuteHookFunction check-catalog catalog-from-db doctor openapi check idempotency-sql kept

# The Lambda binaries: linux/arm64, static, no RPC shim, stripped. CATALOG=file
# (make build, sam build) builds that catalog into both, gzipped and base64'd
# into a string (an argument may hold 128 KiB: about 1 MB of catalog); without
# it they serve the specification's four operations (infra/docs/catalog.md, "The catalog").
LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -buildvcs=false \
	-ldflags='-s -w $(if $(CATALOG),-X main.catalogB64=$(shell gzip -9c < $(CATALOG) | base64 | tr -d '\n'))'

firebird:
	@$(FB) up

demo-db: firebird
	@[ -f $(FB_DATA)/erp_demo.fdb ] || { echo "creating the demo ERP database $(FB_DATA)/erp_demo.fdb"; $(FB) createdb erp_demo.fdb demo UTF8; }

demo-reset: firebird
	$(FB) createdb erp_demo.fdb demo UTF8

run: demo-db
	@go build -o bin/localserver ./infra/localserver
	@echo; echo "Try, from another terminal:"; echo
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Referencias\",\"CODIGO\":\"REF0001\"}'"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Referencias\",\"CODIGO\":\"NO-EXISTE\"}'"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Terceros\",\"CODIGO\":\"800000000\"}'"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Gestion_Primario\",\"TIPO\":\"FV\",\"PREFIJO\":\"FE\",\"NUMERO\":\"1000\"}'"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Inventario_Precio\",\"FECHA_CORTE_\":\"22.11.2026\",\"REFERENCIA_\":\"REF0003\"}'"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/executequery -d '{\"CLAVE\":\"Get_Inventario_Precio\",\"FECHA_CORTE_\":\"22.11.2026\",\"REFERENCIA_\":\"\"}' | wc -c"
	@echo "curl -s -H 'Authorization: Bearer $(DEMO_TOKEN)' -H 'Content-Type: application/json' $(DEMO_URL)/execute -d '{\"CLAVE\":\"Set_Terceros\",\"CODIGO\":\"901234567\",\"DV\":\"3\",\"NATURALEZA\":\"J\",\"EMPRESA\":\"Café Ñuñoa S.A.S.\",\"RAZON_COMERCIAL\":\"Café Ñuñoa\",\"DIRECCION\":\"Calle 10 # 4-21\",\"CODIDENTIDAD\":\"NIT\",\"CODSOCIEDAD\":\"SAS\",\"CODPAIS\":\"CO\",\"CODMUNICIPIO\":\"05001\",\"CODACTIVIDAD\":\"NA\",\"CODZONA\":\"NA\"}'"
	@echo
	@GATEWAY_CATALOG=$(or $(CATALOG),infra/catalog.demo.json) ./bin/localserver -addr $(ADDR) -instances $(INSTANCES) -access $(or $(ACCESS),$(DEMO_ACCESS))

# Serve the instances of a file of your own, with CATALOG=file if given;
# touches no Firebird setup.
serve:
	@go build -o bin/localserver ./infra/localserver
	@$(if $(ACCESS),,$(error make serve needs ACCESS=file: an access document with your own key (make token-key); the demo key is public))
	@$(if $(CATALOG),GATEWAY_CATALOG=$(CATALOG)) ./bin/localserver -addr $(ADDR) -instances $(INSTANCES) -access $(ACCESS) $(if $(BASE_PATH),-base-path '$(BASE_PATH)')

# Draft catalog entries from an instance's procedures, for review.
catalog-from-db:
	@$(call TOOL,catalog) from-db -instances $(INSTANCES) $(if $(INSTANCE),-instance $(INSTANCE)) -procedures '$(or $(PROCEDURES),REST\_%)' $(if $(MERGE),-merge '$(MERGE)')

# The OpenAPI 3.1 document of the demo catalog, its answers as the demo ERP
# declares them; a test fails when the committed file is stale.
openapi: demo-db
	@$(call TOOL,openapi) -out infra/openapi.json
	@echo "wrote infra/openapi.json"

# Hold a deployment to infra/openapi.json and the original's conventions
# (infra/docs/catalog.md, "Contract check"). On the demo instance the reads below are
# checked; elsewhere give FOUND and MISSING (CLAVE:FIELD=VALUE,...), or only
# the refusals are. WRITE=CODE adds a Set_Terceros round trip.
DEMO_FOUND := Get_Referencias:CODIGO=REF0001 Get_Terceros:CODIGO=800000000 Get_Gestion_Primario:TIPO=FV,PREFIJO=FE,NUMERO=1000 Get_Inventario_Precio:FECHA_CORTE_=22.11.2026,REFERENCIA_=REF0003
DEMO_MISSING := Get_Terceros:CODIGO=NADIE Get_Referencias:CODIGO=NADA
CHECK_DEMO = $(if $(filter-out demo,$(or $(INSTANCE),demo)),,yes)
check:
	@$(call TOOL,check) -base $(or $(BASE),http://$(ADDR)) -instance $(or $(INSTANCE),demo) -token '$(or $(TOKEN),$(DEMO_TOKEN))' \
	  $(foreach f,$(or $(FOUND),$(if $(CHECK_DEMO),$(DEMO_FOUND))),-found '$(f)') \
	  $(foreach m,$(or $(MISSING),$(if $(CHECK_DEMO),$(DEMO_MISSING))),-missing '$(m)') $(if $(WRITE),-write $(WRITE))

# The idempotency keys' table and its grants, for a DBA to run with isql on an
# instance's database (infra/docs/answers.md, "Keeping idempotency keys"); USER= names
# the gateway's Firebird user (GATEWAY), not the shell's.
idempotency-sql:
	@$(call TOOL,catalog) idempotency-sql -user '$(if $(filter command line,$(origin USER)),$(USER),GATEWAY)'

# The answers kept under an Idempotency-Key, as the client got them (JSON),
# for a DBA: make kept INSTANCE=name KEY=key (infra/docs/answers.md, "Keeping idempotency keys").
kept:
	@$(call TOOL,catalog) kept -instances $(INSTANCES) -instance '$(or $(INSTANCE),demo)' -key '$(KEY)'

# Compare a catalog (CATALOG=file, or the specification's) with each instance's database.
doctor:
	@$(call TOOL,catalog) doctor -instances $(INSTANCES) $(if $(TOOLS_CATALOG),-catalog $(TOOLS_CATALOG))

# A catalog with an error stops the build, naming the entry and the field.
check-catalog:
	@$(if $(CATALOG),$(call TOOL,catalog) check $(CATALOG),true)

test-db: firebird
	@$(FB) createdb $(notdir $(FB_TEST_DEMO_DB)) demo UTF8
	@$(FB) createdb $(notdir $(FB_TEST_OTHER_DB)) other WIN1252
	@$(FB) createdb $(notdir $(FB_TEST_DIALECT1_DB)) dialect1 UTF8

# -p 1: the integration tests of different packages share one server, and some
# count its open statements or restart it. -race: the gateway is concurrent
# (pools, caches, breakers, hunts), and the tests' faults are where a race
# would show; the detector needs cgo, so a C compiler.
test: test-db
	@command -v gcc >/dev/null || { echo "make test runs the race detector, which needs a C compiler: apt-get install gcc" >&2; exit 1; }
	FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) CGO_ENABLED=1 go test -race -p 1 -count=1 ./...

# Prints each benchmark, then the handler's time as a multiple of the raw
# driver call measured in the same run.
bench: test-db
	@mkdir -p bin
	@FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) go test -run '^$$' -bench . -skip 'Write|BigRead' -benchmem -count $(or $(COUNT),3) ./shared/gateway/ | tee bin/bench.txt
	@FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) go test -run '^$$' -bench BigRead -benchtime 10x -count $(or $(COUNT),3) ./shared/gateway/ | tee -a bin/bench.txt
	@FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) go test -run '^$$' -bench Write -benchtime 3000x -count $(or $(COUNT),3) ./shared/gateway/ | tee -a bin/bench.txt
	@awk '/GetReferencias\/raw-2/ {r+=$$3; nr++} /GetReferencias\/raw-deadline/ {d+=$$3; nd++} /GetReferencias\/handler/ {h+=$$3; nh++} \
	  END {printf "handler / raw = %.2fx; handler / raw-with-deadline = %.2fx (mean of %d runs each)\n", (h/nh)/(r/nr), (h/nh)/(d/nd), nh}' bin/bench.txt
	@awk '/BenchmarkBatch\/raw-100/ {r+=$$3; nr++} /BenchmarkBatch\/batch-100/ {h+=$$3; nh++} \
	  END {if (nh) printf "100 reads: one batch / the raw driver'"'"'s 100 prepared executes = %.2fx (mean of %d runs each)\n", (h/nh)/(r/nr), nh}' bin/bench.txt
	@awk '/BenchmarkBigRead/ {for (i = 3; i < NF; i++) if ($$(i+1) == "streamed/whole-throughput") {t += $$i; n++}} \
	  END {if (n) printf "20,000-row read at 4 clients: streamed / sent whole = %.2fx throughput (mean of %d runs)\n", t/n, n}' bin/bench.txt
	@for w in terceros pago; do awk -v w=$$w '$$1 ~ "BenchmarkWrite/"w {for (i = 3; i < NF; i++) {if ($$(i+1) == "keyed/unkeyed-time") {t += $$i; n++} if ($$(i+1) == "keyed/unkeyed-cpu") c += $$i}} \
	  END {if (n) printf "%s: keyed / unkeyed write = %.2fx time, %.2fx Firebird CPU (mean of %d runs, keyed and unkeyed alternating)\n", w, t/n, c/n, n}' bin/bench.txt; done

# Round trips per operation, through a proxy that stands in for the WAN and
# counts them, for the gateway and the raw driver (infra/docs/internals.md, "Round trips").
roundtrips: test-db
	@FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) go test -count=1 -run '^TestRoundTrips$$' -v ./shared/gateway/ | sed -n 's/^ *roundtrips_test.go:[0-9]*: //p'

# Each fuzz target for FUZZTIME (30 s by default) in turn; make test runs
# their seeds. A failing input is kept under the package's testdata/fuzz.
# FuzzArguments writes what it finds valid into the test database, which
# make test creates again.
fuzz: test-db
	@export FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba); set -o pipefail; \
	grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9]+' shared infra functions | while IFS=: read -r file fn; do \
	  name=$${fn#func }; printf '%-20s %-22s ' "$$name" "$$(dirname $$file)"; \
	  go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(or $(FUZZTIME),30s) ./$$(dirname $$file) 2>&1 | tail -1 || exit 1; \
	done

# The executequery bootstrap's first answer and warm median against a floor
# Lambda's, under the emulated Runtime API, 5 rounds (infra/docs/internals.md, "Cold start").
coldstart: test-db
	@FB_TEST_SYSDBA_PASSWORD=$$($(FB) sysdba) go test -run '^$$' -bench '^BenchmarkColdStart$$' -benchtime 5x -v ./functions/ | grep -E '"msg":"started"|^BenchmarkColdStart' | sed 's/^ *coldstart_test.go:[0-9]*: //'

# The local server on the demo database under 1, 4 and 16 clients, against the
# raw prepared-statement driver loop in the same run; then 5000 mixed requests
# and what the gateway holds in the database afterwards (MON$ tables, SYSDBA).
# DURATION per kind and level (raw and http take turns in four parts), MIXED=0 skips the mixed phase; the server's log
# goes to bin/load-server.log.
load: demo-db
	@go build -o bin/localserver ./infra/localserver
	@export FB_SYSDBA_PASSWORD=$$($(FB) sysdba); $(call TOOL,load) -duration $(or $(DURATION),12s) -mixed $(or $(MIXED),5000)

# One customer's Firebird hangs: what does another customer see?
# (infra/docs/internals.md, "Noisy neighbours"; infra/docs/measurements.md).
load-neighbour: demo-db
	@go build -o bin/localserver ./infra/localserver
	@$(call TOOL,load) -neighbour $(or $(DURATION),30s)

# 500 clients that send their headers or bodies a byte a second, beside one
# that sends normal reads: do the slow ones cost the others anything?
load-slow: demo-db
	@go build -o bin/localserver ./infra/localserver
	@$(call TOOL,load) -slow $(or $(SLOW),500) -slow-for $(or $(DURATION),45s)

# third_party/firebirdsql is upstream's code as released (third_party/README.md).
lint:
	@gofmt -l $$(find . -name '*.go' -not -path './third_party/firebirdsql/*') | (! grep .) || { echo "gofmt would change the files above"; exit 1; }
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

build: check-catalog
	@echo "building bin/executequery/bootstrap, bin/execute/bootstrap and bin/pretraffic/bootstrap with the catalog $(or $(CATALOG),of the specification)"
	@$(LAMBDA_BUILD) -o bin/executequery/bootstrap ./functions/executequery
	@$(LAMBDA_BUILD) -o bin/execute/bootstrap ./functions/execute
	@$(LAMBDA_BUILD) -o bin/pretraffic/bootstrap ./functions/pretraffic
	@ls -l bin/executequery/bootstrap bin/execute/bootstrap bin/pretraffic/bootstrap

# `sam build` runs these (Metadata BuildMethod: makefile) with ARTIFACTS_DIR set;
# CodeUri is the repository root so the one go.mod and shared/ are in reach.
build-ExecuteQueryFunction: check-catalog
	@$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/executequery
build-ExecuteFunction: check-catalog
	@$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/execute
# The pre-traffic hooks (one binary, told its endpoint by the template) carry
# the same catalog, to send one read of each of its operations.
build-ExecuteQueryHookFunction build-ExecuteHookFunction: check-catalog
	@$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/pretraffic

# sam build's cache (samconfig.toml: cached) keys on the source files, not on
# CATALOG: a deploy always builds afresh, or it could ship the binaries of an
# earlier build with another catalog. make local-api builds elsewhere
# (LOCAL_BUILD), so not even a plain sam deploy can pick up its demo catalog.
# The stack's parameters keep their values; PARAMS='Name=Value ...' changes
# those it names (infra/docs/operating.md, "Parameters").
DEPLOY_BUILD := .aws-sam/build
LOCAL_BUILD := .aws-sam/local
deploy:
	@echo "deploying with the catalog $(or $(CATALOG),of the specification (its four operations): set CATALOG=file for a customer's)"
	sam validate --lint
	CATALOG=$(CATALOG) sam build --no-cached --build-dir $(DEPLOY_BUILD)
	@# HOOK_INSTANCE: the pre-traffic hooks check the new versions on it with a
	@# token minted here, read-only, for the two hours a deployment's checks
	@# may take, with the operator's signing key: the hooks hold no key.
	@token=; if [ -n '$(HOOK_INSTANCE)' ]; then \
	  token=$$($(call TOOL,minttoken) -instance '$(HOOK_INSTANCE)' $(if $(SIGNING_KEY_SECRET),-signing-key-secret '$(SIGNING_KEY_SECRET)',-signing-key '$(SIGNING_KEY)') -read-only -expires 2h -only-token) \
	    || { echo "make deploy HOOK_INSTANCE=$(HOOK_INSTANCE) mints the hooks' token with the signing key: give SIGNING_KEY=file or SIGNING_KEY_SECRET=id"; exit 1; }; fi; \
	echo sam deploy --template-file $(DEPLOY_BUILD)/template.yaml $(if $(PARAMS)$(HOOK_INSTANCE),--parameter-overrides $(PARAMS) $(if $(HOOK_INSTANCE),PreTrafficInstance=$(HOOK_INSTANCE) PreTrafficToken=…)); \
	sam deploy --template-file $(DEPLOY_BUILD)/template.yaml $(if $(PARAMS)$(HOOK_INSTANCE),--parameter-overrides $(PARAMS) $(if $(HOOK_INSTANCE),PreTrafficInstance=$(HOOK_INSTANCE) PreTrafficToken=$$token))

# Needs Docker and the demo database (make demo-db); see infra/docs/operating.md,
# "Running the Lambdas locally".
local-api:
	CATALOG=$(or $(CATALOG),infra/catalog.demo.json) sam build --build-dir $(LOCAL_BUILD)
	sam local start-api --template $(LOCAL_BUILD)/template.yaml --env-vars infra/env.json --port 3001
