// Package settings reads the environment variables every binary is
// configured with (infra/docs/configuration.md#configuration) from one table, so that each is
// named, defaulted, parsed and described once, and a wrong value is refused
// at start with the variable's name and the form it wants.
package settings

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/erp-gateway/gateway/shared/access"
	"github.com/erp-gateway/gateway/shared/catalog"
	"github.com/erp-gateway/gateway/shared/erp"
	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

// The variables' names, for messages elsewhere that tell an operator which
// one to set.
const (
	EnvClass             = "GATEWAY_CLASS"
	EnvErrorPrefix       = "GATEWAY_ERROR_PREFIX"
	EnvDBTimeout         = "GATEWAY_DB_TIMEOUT"
	EnvStmtMaxAge        = "GATEWAY_STMT_MAX_AGE"
	EnvConnMaxIdle       = "GATEWAY_CONN_MAX_IDLE"
	EnvMaxBody           = "GATEWAY_MAX_BODY"
	EnvBatchMax          = "GATEWAY_BATCH_MAX"
	EnvBatchBody         = "GATEWAY_BATCH_BODY"
	EnvBatchTimeout      = "GATEWAY_BATCH_TIMEOUT"
	EnvCatalog           = "GATEWAY_CATALOG"
	EnvMaxAnswer         = "GATEWAY_MAX_ANSWER"
	EnvResponseStreaming = "GATEWAY_RESPONSE_STREAMING"
	EnvStreamTimeout     = "GATEWAY_STREAM_TIMEOUT"
	EnvLogLevel          = "LOG_LEVEL"
	EnvSecretPrefix      = "GATEWAY_SECRET_PREFIX"
	EnvSecretSuffix      = "GATEWAY_SECRET_SUFFIX"
	EnvSecretTTL         = "GATEWAY_SECRET_TTL"
	EnvInstancesJSON     = "GATEWAY_INSTANCES_JSON"
	EnvAccessSecret      = "GATEWAY_ACCESS_SECRET"
	EnvAccessRefresh     = "GATEWAY_ACCESS_REFRESH"
	EnvAccessMaxAge      = "GATEWAY_ACCESS_MAX_AGE"
	EnvAccessJSON        = "GATEWAY_ACCESS_JSON"
	EnvIdempotencyTTL    = "GATEWAY_IDEMPOTENCY_TTL"
	EnvMetricsNamespace  = "GATEWAY_METRICS_NAMESPACE"
	EnvLambdaLogLevel    = "GATEWAY_LOG_LEVEL"
	EnvHookEndpoint      = "GATEWAY_HOOK_ENDPOINT"
	EnvHookTarget        = "GATEWAY_HOOK_TARGET"
	EnvHookInstance      = "GATEWAY_HOOK_INSTANCE"
	EnvHookToken         = "GATEWAY_HOOK_TOKEN"
)

// Settings holds every variable's value, its default where it is unset;
// each field is the variable of the same name above.
type Settings struct {
	Class, ErrorPrefix                 string
	DBTimeout, StmtMaxAge, ConnMaxIdle time.Duration
	MaxBody                            int
	BatchMax, BatchBody                int
	BatchTimeout                       time.Duration
	Catalog                            string
	MaxAnswer                          int
	ResponseStreaming                  bool
	StreamTimeout                      time.Duration
	LogLevel                           slog.Level
	SecretPrefix, SecretSuffix         string
	SecretTTL                          time.Duration
	InstancesJSON, AccessSecret        string
	AccessRefresh, AccessMaxAge        time.Duration
	AccessJSON                         string
	IdempotencyTTL                     time.Duration
	MetricsNamespace                   string
	LambdaLogLevel                     slog.Level
	HookEndpoint                       catalog.Endpoint
	HookTarget, HookInstance           string
	HookToken                          string
}

// setting is one variable, a row of the README's table.
type setting struct {
	name string
	// def is the value an unset or empty variable takes, as the README
	// shows it (where "empty" stands for "").
	def  string
	form form
	// meaning is one sentence for an operator; the README's row says more.
	meaning string
}

// form is how a value is read: parse stores it in its field of Settings
// and says whether it is of the form want describes.
type form struct {
	want  string
	parse func(string) bool
	// or names variables read in turn while the setting's own is unset,
	// before its default.
	or []string
}

// table is every setting, in the README's order, each bound to its field
// of s, its default the package's own (what it takes for a zero value). A
// function rather than a package-level table: the forms write into the
// Settings being read. TestSettingsInREADME holds the guide's table to it.
func table(s *Settings) []setting {
	return []setting{
		{EnvClass, gateway.DefaultClass, text(&s.Class), "The interface-class path segment of every route."},
		{EnvErrorPrefix, gateway.DefaultErrorPrefix, text(&s.ErrorPrefix), "The text before exception N in ex_execsql."},
		{EnvDBTimeout, short(gateway.DefaultTimeout), duration(&s.DBTimeout, 0), "The deadline of each database call."},
		{EnvStmtMaxAge, short(firebird.DefaultStmtMaxAge), duration(&s.StmtMaxAge, 0), "How often each pool checks whether a procedure, trigger, view or grant changed: an altered procedure or trigger, a revoked grant or one that mends a failing call is served within this time."},
		{EnvConnMaxIdle, short(firebird.DefaultConnMaxIdle), duration(&s.ConnMaxIdle, 0), "How long a connection may sit idle before it is pinged on its next use."},
		{EnvMaxBody, strconv.Itoa(gateway.DefaultMaxBody), size(&s.MaxBody, 0), "The largest request body."},
		{EnvBatchMax, strconv.Itoa(gateway.DefaultBatchMax), count(&s.BatchMax), "The most calls a batch may hold."},
		{EnvBatchBody, strconv.Itoa(gateway.DefaultBatchBody), size(&s.BatchBody, 0), "The largest body of a batch."},
		{EnvBatchTimeout, short(gateway.DefaultBatchTimeout), duration(&s.BatchTimeout, 0), "The deadline of a whole batch, all its calls and its transaction."},
		{EnvCatalog, "", text(&s.Catalog), "A catalog file to serve instead of the built-in one."},
		// Lambda's response limit, less room for the status and headers:
		// the default is the most.
		{EnvMaxAnswer, strconv.Itoa(gateway.DefaultMaxAnswer), size(&s.MaxAnswer, gateway.DefaultMaxAnswer), "The largest answer sent whole, counted as Lambda counts it."},
		{EnvResponseStreaming, "false", boolean(&s.ResponseStreaming), "Whether a Lambda's integration streams, and so its reads' answers may."},
		{EnvStreamTimeout, short(gateway.DefaultStreamTimeout), duration(&s.StreamTimeout, 0), "The deadline of a read whose answer streams, from its start."},
		{EnvLogLevel, "info", level(&s.LogLevel), "The local server's log level."},
		{EnvSecretPrefix, "", text(&s.SecretPrefix), "Lambdas: an instance's secret id is this prefix and its name."},
		{EnvSecretSuffix, "", text(&s.SecretSuffix), "Lambdas: appended to an instance's secret id; the template gives the reads' function /reader with ReadOnlyDatabaseUser."},
		{EnvSecretTTL, short(tenants.DefaultTTL), duration(&s.SecretTTL, 0), "Lambdas: how long an instance document is cached."},
		{EnvInstancesJSON, "", text(&s.InstancesJSON), "Lambdas, for sam local and tests: an instances file's content inline."},
		{EnvAccessSecret, "", text(&s.AccessSecret), "Lambdas: the secret holding the access document."},
		{EnvAccessRefresh, short(access.DefaultEvery), duration(&s.AccessRefresh, 0), "Lambdas: how often the access document is read again."},
		{EnvAccessMaxAge, short(access.DefaultMaxAge), duration(&s.AccessMaxAge, 0), "Lambdas: tokens are refused once the last good read of the access document is older than this."},
		{EnvAccessJSON, "", text(&s.AccessJSON), "Lambdas, for sam local and tests: the access document inline."},
		{EnvIdempotencyTTL, short(gateway.DefaultKeyTTL), duration(&s.IdempotencyTTL, time.Minute), "How long an idempotency key is kept."},
		{EnvMetricsNamespace, "ErpGateway", text(&s.MetricsNamespace), "Lambdas: the CloudWatch namespace of each request line's metrics."},
		// The template sets it; without, Lambda's own level, then the
		// local server's.
		{EnvLambdaLogLevel, "INFO", or(level(&s.LambdaLogLevel), "AWS_LAMBDA_LOG_LEVEL", EnvLogLevel), "Lambdas: the level of every log line but the request line."},
		{EnvHookEndpoint, "", endpoint(&s.HookEndpoint), "Pre-traffic hooks: the endpoint whose new version is checked."},
		{EnvHookTarget, "", text(&s.HookTarget), "Pre-traffic hooks: the ARN of the version checked."},
		{EnvHookInstance, "", instance(&s.HookInstance), "Pre-traffic hooks: the instance the checks call; none, nothing is called."},
		{EnvHookToken, "", text(&s.HookToken), "Pre-traffic hooks: the read-only token the checks call the instance with, minted at deploy time."},
	}
}

// Read reads every setting through getenv (os.Getenv in main, a map in
// tests). A value that is not of its setting's form is an error naming the
// variable, the value and the form.
func Read(getenv func(string) string) (Settings, error) {
	var s Settings
	for _, e := range table(&s) {
		name, v := e.name, getenv(e.name)
		for _, alt := range e.form.or {
			if v != "" {
				break
			}
			name, v = alt, getenv(alt)
		}
		if v == "" {
			name, v = e.name, e.def
		}
		if !e.form.parse(v) {
			return Settings{}, fmt.Errorf("%s=%q: want %s", name, v, e.form.want)
		}
	}
	if s.AccessMaxAge < s.AccessRefresh {
		return Settings{}, fmt.Errorf("%s (%s) is shorter than %s (%s): every environment would refuse tokens between reads",
			EnvAccessMaxAge, s.AccessMaxAge, EnvAccessRefresh, s.AccessRefresh)
	}
	return s, nil
}

// short writes a default duration as the guide shows it: 240s is 4m, 24h
// no 24h0m0s.
func short(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// Gateway is the handler's Config of the settings every entry point shares
// (infra/docs/configuration.md#configuration); what only some serve (OpenAPI, streaming,
// metrics) each adds.
func (s Settings) Gateway() gateway.Config {
	return gateway.Config{
		Class:         s.Class,
		ErrorPrefix:   s.ErrorPrefix,
		Timeout:       s.DBTimeout,
		MaxBody:       int64(s.MaxBody),
		BatchMax:      s.BatchMax,
		BatchBody:     int64(s.BatchBody),
		BatchTimeout:  s.BatchTimeout,
		MaxAnswer:     s.MaxAnswer,
		StreamTimeout: s.StreamTimeout,
		KeyTTL:        s.IdempotencyTTL,
	}
}

// Pools is the pools' Options of the settings, logging to log. A call's
// deadline is the call's or the batch's: the longest bounds the age of
// every transaction of ours (orphans, firebird.Options).
func (s Settings) Pools(log *slog.Logger) firebird.Options {
	return firebird.Options{StmtMaxAge: s.StmtMaxAge, ConnMaxIdle: s.ConnMaxIdle, LongestCall: max(s.DBTimeout, s.BatchTimeout), Log: log}
}

// LoadCatalog reads the catalog file of the setting, or returns the
// specification's operations when it is unset.
func (s Settings) LoadCatalog() (*catalog.Catalog, error) {
	if s.Catalog == "" {
		return catalog.Default(), nil
	}
	c, err := catalog.LoadFile(s.Catalog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCatalog, err)
	}
	return c, nil
}

// or is f read from the first of names that is set while its own variable
// is unset.
func or(f form, names ...string) form {
	f.or = names
	return f
}

func text(dst *string) form {
	return form{want: "any text", parse: func(v string) bool { *dst = v; return true }}
}

// duration reads a duration above zero, and at least least when it is set.
func duration(dst *time.Duration, least time.Duration) form {
	want := "a positive duration such as 8s"
	if least > 0 {
		want = fmt.Sprintf("a duration of %s or more", least)
	}
	return form{want: want, parse: func(v string) bool {
		d, err := time.ParseDuration(v)
		*dst = d
		return err == nil && d > 0 && d >= least
	}}
}

// size reads a positive number of bytes, at most most when it is set.
func size(dst *int, most int) form {
	want := "a positive number of bytes"
	if most > 0 {
		want = fmt.Sprintf("a number of bytes up to %d", most)
	}
	return form{want: want, parse: func(v string) bool {
		n, err := strconv.Atoi(v)
		*dst = n
		return err == nil && n > 0 && (most == 0 || n <= most)
	}}
}

// count reads a positive whole number.
func count(dst *int) form {
	return form{want: "a positive whole number", parse: func(v string) bool {
		n, err := strconv.Atoi(v)
		*dst = n
		return err == nil && n > 0
	}}
}

// boolean takes only the two words the template writes: a typo of either
// must not pass for the other.
func boolean(dst *bool) form {
	return form{want: "true or false", parse: func(v string) bool {
		*dst = v == "true"
		return v == "true" || v == "false"
	}}
}

// level reads slog's names, and Lambda's TRACE and FATAL (its
// AWS_LAMBDA_LOG_LEVEL may hold them) as their nearest.
func level(dst *slog.Level) form {
	return form{want: "debug, info, warn or error (or trace, fatal), in any case", parse: func(v string) bool {
		switch strings.ToUpper(v) {
		case "TRACE":
			*dst = slog.LevelDebug
			return true
		case "FATAL":
			*dst = slog.LevelError
			return true
		}
		return dst.UnmarshalText([]byte(v)) == nil
	}}
}

// endpoint is empty everywhere but in a hook, which says whether the
// endpoint is needed.
func endpoint(dst *catalog.Endpoint) form {
	return form{want: fmt.Sprintf("%s or %s", catalog.ExecuteQuery, catalog.Execute), parse: func(v string) bool {
		*dst = catalog.Endpoint(v)
		return *dst == "" || *dst == catalog.ExecuteQuery || *dst == catalog.Execute
	}}
}

func instance(dst *string) form {
	return form{want: "an instance name (" + erp.InstanceNameRule + ")", parse: func(v string) bool {
		*dst = v
		return v == "" || erp.ValidInstanceName(v)
	}}
}
