package mcpfleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/telemetry"
)

// tracingFlushTimeout bounds the export of the last spans at the end of a
// role's drain.
const tracingFlushTimeout = 5 * time.Second

// serviceName is a role's default service.name (OTEL_SERVICE_NAME wins).
func (r role) serviceName() string {
	switch r {
	case roleFrontend:
		return "mcpfleet-frontend"
	case roleWorker:
		return "mcpfleet-worker"
	}
	return "mcpfleet"
}

// startTracing sets up the process's OpenTelemetry tracing from the
// OTEL_* environment (package telemetry) for role r: service.instance.id
// is the process's id on the bus, service.version the program's version.
// An OTEL_* value it cannot follow is an error naming the variable.
func startTracing(ctx context.Context, r role, id, version string, log *slog.Logger) (*telemetry.Tracing, error) {
	t, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: r.serviceName(), InstanceID: id, Version: version, Logger: log})
	if err != nil {
		return nil, err
	}
	if t.Enabled() {
		log.Info("tracing on: OTLP export", "protocol", t.Protocol())
	}
	return t, nil
}

// stopTracing exports the spans still queued, at the end of the drain.
func stopTracing(t *telemetry.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: exporting the last spans", "err", err)
	}
}

// programVersion is service.version: the App's version, else the main
// module's from the build information, else mcpfleet's.
func (a *App) programVersion() string {
	if a.Version != "" {
		return a.Version
	}
	if v := telemetry.BuildVersion(); v != "" {
		return v
	}
	return Version
}

// randomID is a process id on the bus when --id is not set: 12 random hex
// digits, as frontend.Options and worker.Options would draw.
func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
