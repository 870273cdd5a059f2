// Command localserver serves the gateway over plain HTTP with the instances of
// a local instances file: `make run` and `make serve` use it where there is no
// Docker for `sam local start-api`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/erp-gateway/gateway/shared/firebird"
	"github.com/erp-gateway/gateway/shared/gateway"
	"github.com/erp-gateway/gateway/shared/tenants"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on")
	instancesPath := flag.String("instances", "infra/instances.demo.json", "instances file: instance name -> instance document")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: gateway.LogLevel(os.Getenv("LOG_LEVEL"))}))
	if err := run(*addr, *instancesPath, log); err != nil {
		log.Error("localserver stopped", "err", err)
		os.Exit(1)
	}
}

func run(addr, instancesPath string, log *slog.Logger) error {
	cfg, err := gateway.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg.OpenAPI = true
	cat, err := gateway.CatalogFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	instances, err := tenants.LoadFile(instancesPath)
	if err != nil {
		return err
	}
	opts, err := firebird.OptionsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	pools := firebird.NewPools(opts)
	defer pools.Close()

	srv := &http.Server{
		Addr:              addr,
		Handler:           gateway.New(cfg, cat, instances, pools, log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown) //nolint:errcheck // best effort on the way out
	}()
	fmt.Fprintf(os.Stderr, "serving the gateway on http://%s (instances from %s)\n", addr, instancesPath)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
