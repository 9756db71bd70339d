{{/* Names */}}
{{- define "mcpfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcpfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<suffix>", within 63 characters */}}
{{- define "mcpfleet.component" -}}
{{- printf "%s-%s" (include "mcpfleet.fullname" .ctx | trunc (int (sub 62 (len .suffix)))) .suffix | trimSuffix "-" }}
{{- end }}

{{- define "mcpfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels: pass (dict "ctx" $ "component" "frontend") */}}
{{- define "mcpfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpfleet.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "mcpfleet.labels" -}}
helm.sh/chart: {{ include "mcpfleet.chart" .ctx }}
{{ include "mcpfleet.selectorLabels" . }}
app.kubernetes.io/part-of: mcpfleet
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mcpfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcpfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image of a role: pass (dict "ctx" $ "role" .Values.frontend) */}}
{{- define "mcpfleet.image" -}}
{{- $repo := .role.image.repository | default .ctx.Values.image.repository }}
{{- $tag := .role.image.tag | default .ctx.Values.image.tag | default .ctx.Chart.AppVersion }}
{{- printf "%s:%s" $repo (toString $tag) }}
{{- end }}

{{/* The state key Secret's name and key */}}
{{- define "mcpfleet.stateKeySecret" -}}
{{- if .Values.stateKey.existingSecret }}
{{- .Values.stateKey.existingSecret }}
{{- else }}
{{- include "mcpfleet.component" (dict "ctx" . "suffix" "state-key") }}
{{- end }}
{{- end }}

{{- define "mcpfleet.stateKeySecretKey" -}}
{{- if .Values.stateKey.existingSecret }}
{{- .Values.stateKey.existingSecretKey | default "state-key" }}
{{- else }}
{{- "state-key" }}
{{- end }}
{{- end }}

{{/*
Validation, included by every template that needs the values it checks
(fail ends the render with the message).
*/}}
{{- define "mcpfleet.validateStateKey" -}}
{{- if not .Values.stateKey.existingSecret }}
{{- $msg := "stateKey.value or stateKey.existingSecret is required: the workers' MCPFLEET_STATE_KEY, base64 of 32 random bytes, the same on every worker (create one with `openssl rand -base64 32`; see docs/kubernetes.md)" }}
{{- $v := required $msg .Values.stateKey.value | toString | trim }}
{{- if not $v }}{{ fail $msg }}{{ end }}
{{- range $i, $k := splitList "," $v }}
{{- if not (regexMatch "^[A-Za-z0-9+/_-]{43}=?$" (trim $k)) }}
{{- fail (printf "stateKey.value: key %d of %d is not the base64 of 32 bytes (create one with `openssl rand -base64 32`)" (add1 $i) (len (splitList "," $v))) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Seconds of terminationGracePeriodSeconds: (dict "role" .Values.frontend "need" N "margin" M "name" "frontend") */}}
{{- define "mcpfleet.grace" -}}
{{- $need := int .need }}
{{- if kindIs "invalid" .role.terminationGracePeriodSeconds }}
{{- add $need (int .margin) }}
{{- else }}
{{- $set := int .role.terminationGracePeriodSeconds }}
{{- if lt $set $need }}
{{- fail (printf "%s.terminationGracePeriodSeconds (%d) must cover the drain: at least %d seconds (drain delay + drain timeout)" .name $set $need) }}
{{- end }}
{{- $set }}
{{- end }}
{{- end }}

{{/*
Flags the chart sets itself (by their environment twins); role.config may
not name them.
*/}}
{{- define "mcpfleet.checkConfig" -}}
{{- $managed := list "listen" "path" "admin-listen" "nats-url" "redis-url" "redis-mode" "state-key" "allowed-hosts" "allowed-origins" "drain-delay" "drain-timeout" "connect-timeout" "log-format" "log-level" }}
{{- range $k, $v := .role.config }}
{{- if has $k $managed }}
{{- fail (printf "%s.config.%s: the chart sets --%s itself; use its own value (docs/kubernetes.md, Values)" $.name $k $k) }}
{{- end }}
{{- if not (regexMatch "^[a-z0-9][a-z0-9-]*$" $k) }}
{{- fail (printf "%s.config.%s: want a flag name without the dashes (session-ttl)" $.name $k) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment twin of a flag name: session-ttl is MCPFLEET_SESSION_TTL */}}
{{- define "mcpfleet.envName" -}}
{{- printf "MCPFLEET_%s" (. | upper | replace "-" "_") }}
{{- end }}

{{/*
A value as a flag would read it: YAML numbers reach templates as float64,
so a whole number is printed without exponent or decimals (8388608, not
8.388608e+06); lists are joined with commas.
*/}}
{{- define "mcpfleet.scalar" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}
{{- int64 . }}
{{- else if kindIs "slice" . }}
{{- join "," . }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{/* role.config as env entries */}}
{{- define "mcpfleet.configEnv" -}}
{{- range $k, $v := .role.config }}
- name: {{ include "mcpfleet.envName" $k }}
  value: {{ include "mcpfleet.scalar" $v | quote }}
{{- end }}
{{- end }}

{{/* The NATS subchart's client Service, as that chart names it */}}
{{- define "mcpfleet.natsHost" -}}
{{- $n := .Values.nats }}
{{- if and $n.service $n.service.name }}
{{- $n.service.name }}
{{- else if $n.fullnameOverride }}
{{- $n.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "nats" $n.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Redis subchart's fullname, as that chart names it */}}
{{- define "mcpfleet.redisFullname" -}}
{{- $r := .Values.redis }}
{{- if $r.fullnameOverride }}
{{- $r.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "redis" $r.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* MCPFLEET_NATS_URL of both roles */}}
{{- define "mcpfleet.natsEnv" -}}
{{- if .Values.nats.enabled }}
- name: MCPFLEET_NATS_URL
  value: {{ printf "nats://%s.%s.svc:4222" (include "mcpfleet.natsHost" .) .Release.Namespace | quote }}
{{- else if .Values.externalNats.existingSecret }}
- name: MCPFLEET_NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.externalNats.existingSecret }}
      key: {{ .Values.externalNats.existingSecretKey }}
{{- else }}
{{- $urls := .Values.externalNats.urls | default list }}
{{- if kindIs "string" $urls }}{{ $urls = list $urls }}{{ end }}
{{- if not $urls }}
{{- fail "externalNats.urls (or externalNats.existingSecret, or nats.enabled) is required: the NATS servers of frontends and workers" }}
{{- end }}
- name: MCPFLEET_NATS_URL
  value: {{ join "," $urls | quote }}
{{- end }}
{{- end }}

{{/*
--redis-mode of the frontends. With redis.enabled, what the Redis chart
runs: sentinel for its replication architecture with Sentinel (no Service
then leads to the master: the frontends ask the sentinels), single
otherwise. Else externalRedis.mode.
*/}}
{{- define "mcpfleet.redisMode" -}}
{{- if .Values.redis.enabled }}
{{- $r := .Values.redis }}
{{- if and (eq (toString $r.architecture) "replication") (dig "sentinel" "enabled" false $r) }}
{{- "sentinel" }}
{{- else }}
{{- "single" }}
{{- end }}
{{- else }}
{{- $m := .Values.externalRedis.mode | default "single" | toString }}
{{- if not (has $m (list "single" "cluster" "sentinel")) }}
{{- fail (printf "externalRedis.mode %q: want single, cluster or sentinel (--redis-mode: what externalRedis.url names)" $m) }}
{{- end }}
{{- $m }}
{{- end }}
{{- end }}

{{/*
MCPFLEET_REDIS_URL of the frontends, in the form of their --redis-mode,
and MCPFLEET_REDIS_MODE unless single (the binaries' default).
*/}}
{{- define "mcpfleet.redisEnv" -}}
{{- $mode := include "mcpfleet.redisMode" . }}
{{- if .Values.redis.enabled }}
{{- $r := .Values.redis }}
{{- $full := include "mcpfleet.redisFullname" . }}
{{- $auth := dig "auth" "enabled" false $r }}
{{- if $auth }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $r.auth.existingSecret | default $full }}
      key: {{ $r.auth.existingSecretPasswordKey | default "redis-password" }}
{{- end }}
{{- if eq $mode "sentinel" }}
{{- /*
The sentinels, one in each pod of the chart's StatefulSet <fullname>-node,
by the pods' names in the headless Service (ParseFailoverURL's form: the
first in the authority, the others as addr); the user information
authenticates to the sentinels (the chart's auth.sentinel, the same
password), password= to the master.
*/}}
{{- $port := int (dig "sentinel" "containerPorts" "sentinel" 26379 $r) }}
{{- $hosts := list }}
{{- range $i := until (int (dig "replica" "replicaCount" 3 $r)) }}
{{- $hosts = append $hosts (printf "%s-node-%d.%s-headless.%s.svc:%d" $full $i $full $.Release.Namespace $port) }}
{{- end }}
{{- $query := list }}
{{- range (rest $hosts) }}
{{- $query = append $query (printf "addr=%s" .) }}
{{- end }}
{{- $query = append $query (printf "master_name=%s" (dig "sentinel" "masterSet" "mymaster" $r)) }}
{{- $user := "" }}
{{- if $auth }}
{{- $query = append $query "password=$(REDIS_PASSWORD)" }}
{{- if dig "auth" "sentinel" true $r }}{{ $user = ":$(REDIS_PASSWORD)@" }}{{ end }}
{{- end }}
- name: MCPFLEET_REDIS_URL
  value: {{ printf "redis://%s%s/0?%s" $user (first $hosts) (join "&" $query) | quote }}
{{- else }}
{{- $host := printf "%s-master.%s.svc" $full .Release.Namespace }}
- name: MCPFLEET_REDIS_URL
  value: {{ printf "redis://%s%s:6379/0" (ternary ":$(REDIS_PASSWORD)@" "" $auth) $host | quote }}
{{- end }}
{{- else if .Values.externalRedis.existingSecret }}
- name: MCPFLEET_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.externalRedis.existingSecret }}
      key: {{ .Values.externalRedis.existingSecretKey }}
{{- else }}
- name: MCPFLEET_REDIS_URL
  value: {{ required "externalRedis.url (or externalRedis.existingSecret, or redis.enabled) is required: the frontends' session store" .Values.externalRedis.url | quote }}
{{- end }}
{{- if ne $mode "single" }}
- name: MCPFLEET_REDIS_MODE
  value: {{ $mode | quote }}
{{- end }}
{{- end }}

{{/* The MCP Service's name */}}
{{- define "mcpfleet.frontendService" -}}
{{- include "mcpfleet.component" (dict "ctx" . "suffix" "frontend") }}
{{- end }}

{{/* --allowed-hosts of the frontends */}}
{{- define "mcpfleet.allowedHosts" -}}
{{- if .Values.frontend.allowedHosts }}
{{- join "," .Values.frontend.allowedHosts }}
{{- else }}
{{- $svc := include "mcpfleet.frontendService" . }}
{{- $ns := .Release.Namespace }}
{{- $hosts := list }}
{{- if .Values.ingress.enabled }}
{{- range .Values.ingress.hosts }}
{{- if .host }}{{ $hosts = append $hosts .host }}{{ end }}
{{- end }}
{{- end }}
{{- $hosts = concat $hosts (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) "localhost" "127.0.0.1") }}
{{- join "," (uniq $hosts) }}
{{- end }}
{{- end }}

{{/* The env every role gets */}}
{{- define "mcpfleet.commonEnv" -}}
- name: MCPFLEET_ADMIN_LISTEN
  value: {{ printf "%s:%d" .Values.bindAddress (int .Values.adminPort) | quote }}
- name: MCPFLEET_CONNECT_TIMEOUT
  value: {{ printf "%ds" (int .Values.connectTimeoutSeconds) | quote }}
- name: MCPFLEET_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: MCPFLEET_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end }}

{{/*
Tracing (otel.*): the OpenTelemetry SDK's variables of a role, each when
set; with an endpoint, the role as the service name: (dict "ctx" $ "service"
"frontend")
*/}}
{{- define "mcpfleet.otelEnv" -}}
{{- $o := .ctx.Values.otel }}
{{- $protocols := list "grpc" "http/protobuf" "http/json" }}
{{- if and $o.protocol (not (has (toString $o.protocol) $protocols)) }}
{{- fail (printf "otel.protocol %q: want grpc, http/protobuf or http/json (OTEL_EXPORTER_OTLP_PROTOCOL)" (toString $o.protocol)) }}
{{- end }}
{{- $samplers := list "always_on" "always_off" "traceidratio" "parentbased_always_on" "parentbased_always_off" "parentbased_traceidratio" }}
{{- if and $o.sampler (not (has (toString $o.sampler) $samplers)) }}
{{- fail (printf "otel.sampler %q: want one of %s (OTEL_TRACES_SAMPLER)" (toString $o.sampler) (join ", " $samplers)) }}
{{- end }}
{{- with $o.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | toString | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ $.service | quote }}
{{- end }}
{{- with $o.protocol }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ . | toString | quote }}
{{- end }}
{{- with $o.sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" $o.samplerArg) }}
{{- if ne (toString $o.samplerArg) "" }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $o.samplerArg | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Probes on the admin port: (dict "ctx" $ "role" .Values.frontend) */}}
{{- define "mcpfleet.probes" -}}
{{- $v := .ctx.Values }}
startupProbe:
  httpGet:
    path: /healthz
    port: admin
  periodSeconds: 2
  timeoutSeconds: 2
  failureThreshold: {{ div (add (int $v.connectTimeoutSeconds) (int $v.startupProbeMarginSeconds) 1) 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: admin
  periodSeconds: {{ .role.readinessProbe.periodSeconds }}
  timeoutSeconds: {{ .role.readinessProbe.timeoutSeconds }}
  failureThreshold: {{ .role.readinessProbe.failureThreshold }}
  successThreshold: 1
livenessProbe:
  httpGet:
    path: /healthz
    port: admin
  periodSeconds: {{ .role.livenessProbe.periodSeconds }}
  timeoutSeconds: {{ .role.livenessProbe.timeoutSeconds }}
  failureThreshold: {{ .role.livenessProbe.failureThreshold }}
{{- end }}

{{/* Topology spread constraints with the selector labels filled in */}}
{{- define "mcpfleet.topologySpread" -}}
{{- $sel := include "mcpfleet.selectorLabels" (dict "ctx" .ctx "component" .component) | fromYaml }}
{{- $out := list }}
{{- range .role.topologySpreadConstraints }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $sel) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- if $out }}
topologySpreadConstraints:
{{- toYaml $out | nindent 2 }}
{{- end }}
{{- end }}

{{/*
GOMEMLIMIT of a role: 90 % of its resources.limits.memory, in bytes, so that
the Go runtime collects harder as the heap nears the container's limit
(the garbage-collector tuner, --gc-headroom, lets the heap grow by up to
64 MiB between collections while the live heap is small). None when the
role has no memory limit, when its env sets GOMEMLIMIT itself, or when the
limit is not a plain quantity (a number with no suffix or one of k, M, G,
T, Ki, Mi, Gi, Ti): (dict "role" .Values.frontend)
*/}}
{{- define "mcpfleet.goMemLimit" -}}
{{- $limit := "" }}
{{- with .role.resources }}{{ with .limits }}{{ with .memory }}{{ $limit = toString . }}{{ end }}{{ end }}{{ end }}
{{- $own := false }}
{{- range .role.env }}{{ if eq (toString .name) "GOMEMLIMIT" }}{{ $own = true }}{{ end }}{{ end }}
{{- $units := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $limit }}
{{- $suffix := trimPrefix $num $limit }}
{{- if and $num (not $own) (hasKey $units $suffix) }}
- name: GOMEMLIMIT
  value: {{ mulf (float64 $num) (get $units $suffix) 0.9 | floor | int64 | toString | quote }}
{{- end }}
{{- end }}
