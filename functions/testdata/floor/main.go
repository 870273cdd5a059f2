// Command floor is the Lambda the functions' cold start and warm latency are
// measured against (BenchmarkColdStart): aws-lambda-go, the instance's
// connection read from Secrets Manager at the first event (FLOOR_SECRET, as
// the functions read it, from the same endpoint), and one firebirdsql
// statement prepared then and reused, its rows encoded with encoding/json;
// nothing else. FLOOR_CODIGO is the read's argument.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	_ "github.com/nakagami/firebirdsql"
)

func main() {
	prepare := sync.OnceValues(func() (*sql.Stmt, error) {
		ctx := context.Background()
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(os.Getenv("FLOOR_SECRET"))})
		if err != nil {
			return nil, err
		}
		var c struct{ Host, Database, User, Password string }
		if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &c); err != nil {
			return nil, err
		}
		dsn := fmt.Sprintf("firebird://%s@%s:3050/%s?wire_crypt=required", url.UserPassword(c.User, c.Password), c.Host, c.Database)
		db, err := sql.Open("firebirdsql", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		return db.Prepare("SELECT * FROM REST_SELECT_TERCEROS(?)")
	})
	lambda.Start(func(ctx context.Context, _ events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		stmt, err := prepare()
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		rows, err := stmt.QueryContext(ctx, os.Getenv("FLOOR_CODIGO"))
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var data []map[string]any
		for rows.Next() {
			vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return events.APIGatewayProxyResponse{}, err
			}
			row := map[string]any{}
			for i, c := range cols {
				row[c] = vals[i]
			}
			data = append(data, row)
		}
		body, err := json.Marshal(map[string]any{"cod_error": 0, "data": data})
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: string(body)}, err
	})
}
