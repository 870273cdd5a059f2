package catalog

// Default is the operations table of the specification. Adding a CLAVE is one
// entry here plus its stored procedure in the ERP database.
func Default() *Catalog {
	c, err := New(DefaultOperations())
	if err != nil {
		panic(err) // the table below is a constant; a test covers it
	}
	return c
}

// DefaultOperations returns a fresh copy of the table, for a deployment or a
// test that adds its own operations.
func DefaultOperations() []Operation {
	return []Operation{
		{
			Clave: "Get_Referencias", Endpoint: ExecuteQuery, Procedure: "REST_SELECT_REFERENCIA",
			Params: []Param{{Name: "CODIGO", MaxLen: 20, Required: true}},
		},
		{
			Clave: "Get_Terceros", Endpoint: ExecuteQuery, Procedure: "REST_SELECT_TERCEROS",
			Params: []Param{{Name: "CODIGO", MaxLen: 15, Required: true}},
		},
		{
			Clave: "Get_Gestion_Primario", Endpoint: ExecuteQuery, Procedure: "REST_SELECT_GESTION_PRIMARIO",
			Params: []Param{
				{Name: "TIPO", MaxLen: 5, Required: true},
				{Name: "PREFIJO", MaxLen: 5, Required: true},
				{Name: "NUMERO", MaxLen: 10, Required: true},
			},
		},
		{
			Clave: "Set_Terceros", Endpoint: Execute, Procedure: "REST_INSERT_TERCEROS",
			// The specification's order, which is the procedure's.
			Params: []Param{
				{Name: "CODIGO", MaxLen: 15, Required: true},
				{Name: "DV", MaxLen: 1, Required: true},
				{Name: "NATURALEZA", MaxLen: 1, Required: true},
				{Name: "NOM1", MaxLen: 20},
				{Name: "NOM2", MaxLen: 20},
				{Name: "APL1", MaxLen: 20},
				{Name: "APL2", MaxLen: 20},
				{Name: "EMPRESA", MaxLen: 80},
				{Name: "RAZON_COMERCIAL", MaxLen: 50, Required: true},
				{Name: "DIRECCION", MaxLen: 80, Required: true},
				{Name: "TELEFONO", MaxLen: 50},
				{Name: "MOVIL", MaxLen: 50},
				{Name: "EMAIL", MaxLen: 50},
				{Name: "CODIGO_POSTAL", MaxLen: 6},
				{Name: "GERENTE", MaxLen: 50},
				{Name: "CODIDENTIDAD", MaxLen: 5, Required: true},
				{Name: "CODSOCIEDAD", MaxLen: 5, Required: true},
				{Name: "CODPAIS", MaxLen: 5, Required: true},
				{Name: "CODACTIVIDAD", MaxLen: 5},
				{Name: "CODZONA", MaxLen: 5},
				{Name: "CODMUNICIPIO", MaxLen: 5, Required: true},
			},
			ReadBack: &ReadBack{Procedure: "REST_SELECT_TERCEROS", Params: []string{"CODIGO"}},
		},
	}
}
