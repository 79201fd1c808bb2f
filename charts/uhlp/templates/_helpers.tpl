{{/* The chart name, or nameOverride. */}}
{{- define "uhlp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<chart>, or fullnameOverride; the release name alone when it already holds the chart name. */}}
{{- define "uhlp.fullname" -}}
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

{{- define "uhlp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "uhlp.labels" -}}
helm.sh/chart: {{ include "uhlp.chart" . }}
app.kubernetes.io/name: {{ include "uhlp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: uhlp
{{- end }}

{{/* Selector labels of one component: include "uhlp.selectorLabels" (list . "core"). */}}
{{- define "uhlp.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "uhlp.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels of one component's objects. */}}
{{- define "uhlp.componentLabels" -}}
{{ include "uhlp.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* An image reference: include "uhlp.image" (list . .Values.image); an empty tag is the chart's appVersion. */}}
{{- define "uhlp.image" -}}
{{- $image := index . 1 -}}
{{- printf "%s:%s" $image.repository (default (index . 0).Chart.AppVersion $image.tag) }}
{{- end }}

{{/* A runner image of sandbox pods: include "uhlp.runnerImage" (list . "jit"); empty: uhlp/<runner>:<appVersion>. */}}
{{- define "uhlp.runnerImage" -}}
{{- $root := index . 0 -}}
{{- $runner := index . 1 -}}
{{- $repository := get (dict "jit" "uhlp/jit-runner" "llm" "uhlp/llm-orchestrator" "mcp" "uhlp/mcp-host") $runner -}}
{{- default (printf "%s:%s" $repository $root.Chart.AppVersion) (get $root.Values.core.sandboxes.runnerImages $runner) }}
{{- end }}

{{/* The MCP package cache volume as the core and the operator name it (`pvc:<claim>`, `hostPath:<dir>`); empty: none. */}}
{{- define "uhlp.mcpPackageVolume" -}}
{{- with .Values.core.mcp.packageCache -}}
{{- if .claimName }}pvc:{{ .claimName }}{{ else if .hostPath }}hostPath:{{ .hostPath }}{{ end -}}
{{- end -}}
{{- end }}

{{/*
Replicas of one component on different nodes when the scheduler can: the pod affinity
given, else a preferred anti-affinity on the host name. include "uhlp.affinity" (list . "core" .Values.core.affinity)
*/}}
{{- define "uhlp.affinity" -}}
{{- $given := index . 2 -}}
{{- if $given }}
{{- toYaml $given }}
{{- else }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "uhlp.selectorLabels" (list (index . 0) (index . 1)) | nindent 12 }}
{{- end }}
{{- end }}

{{/*
"true" when this release installs and upgrades the CRD named: it does not exist yet, this
release owns it already, or `crds.adopt` takes it over (with `--take-ownership`). A CRD
kept by a release uninstalled before, or owned by another one, is left as it is: Helm
would refuse the whole install over it ("invalid ownership metadata"), and CRDs are the
cluster's, shared by every release. `helm template` sees no cluster: it renders them.
*/}}
{{- define "uhlp.crdOwned" -}}
{{- $root := index . 0 -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" (index . 1) -}}
{{- $annotations := dict -}}
{{- if $crd }}{{ $annotations = $crd.metadata.annotations | default dict }}{{ end -}}
{{- if or (not $crd) $root.Values.crds.adopt (and (eq (get $annotations "meta.helm.sh/release-name") $root.Release.Name) (eq (get $annotations "meta.helm.sh/release-namespace") $root.Release.Namespace)) -}}
true
{{- end -}}
{{- end }}

{{- define "uhlp.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (printf "%s-operator" (include "uhlp.fullname" .)) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "uhlp.core.serviceAccountName" -}}
{{- if .Values.core.serviceAccount.create }}
{{- default (printf "%s-core" (include "uhlp.fullname" .)) .Values.core.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.core.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespaces whose AppDefinitions are served (namespaced RBAC), one per line. */}}
{{- define "uhlp.watchNamespaces" -}}
{{- if .Values.watchNamespaces }}
{{- join "\n" .Values.watchNamespaces }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/* `--namespace NS` arguments, one list item each; none when cluster-wide. */}}
{{- define "uhlp.namespaceArgs" -}}
{{- if not .Values.rbac.clusterWide }}
{{- range (include "uhlp.watchNamespaces" . | splitList "\n") }}
- --namespace
- {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pod and container hardening shared by every workload: non-root, read-only root, nothing extra. */}}
{{- define "uhlp.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "uhlp.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end }}

{{- define "uhlp.redis.fullname" -}}
{{- printf "%s-redis" (include "uhlp.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "uhlp.redis.sentinelName" -}}
{{- printf "%s-redis-sentinel" (include "uhlp.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The DNS name of data pod N of the bundled Redis (its headless Service names it, ready or not). */}}
{{- define "uhlp.redis.podHost" -}}
{{- $root := index . 0 }}{{ $fullname := include "uhlp.redis.fullname" $root }}
{{- printf "%s-%d.%s-headless.%s.svc" $fullname (index . 1) $fullname $root.Release.Namespace }}
{{- end }}

{{/* The Secret key (JSON: existingSecret, secretKey) of the CA the bundled or external Redis's certificates are checked against; empty: none. */}}
{{- define "uhlp.redis.caSecret" -}}
{{- $external := .Values.redis.external }}
{{- $bundled := .Values.redis.bundled }}
{{- if and $bundled.enabled $bundled.sentinel.enabled $bundled.tls.enabled }}
{{- toJson (dict "existingSecret" $bundled.tls.existingSecret "secretKey" $bundled.tls.caKey) }}
{{- else if and $external.sentinel.masterName $external.sentinel.tls $external.sentinel.ca.existingSecret }}
{{- toJson $external.sentinel.ca }}
{{- else if and $external.cluster.nodes $external.cluster.tls $external.cluster.ca.existingSecret }}
{{- toJson $external.cluster.ca }}
{{- end }}
{{- end }}

{{/* host:port of the bundled sentinels, comma-separated. */}}
{{- define "uhlp.redis.sentinelHosts" -}}
{{- $name := include "uhlp.redis.sentinelName" . }}
{{- $hosts := list }}
{{- range $i := until 3 }}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc:26379" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- join "," $hosts }}
{{- end }}

{{/* The bundled Sentinel's start-up step (files/redis-sentinel-init.mjs) on the core image; list: root, role. */}}
{{- define "uhlp.redis.initContainer" -}}
{{- $root := index . 0 }}{{ $role := index . 1 }}{{ $redis := $root.Values.redis.bundled -}}
- name: config
  image: {{ include "uhlp.image" (list $root $root.Values.image) }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  command: [/usr/local/bin/node, /scripts/redis-sentinel-init.mjs]
  env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: UHLP_REDIS_INIT_ROLE
      value: {{ $role }}
    - name: UHLP_REDIS_INIT_ME
      value: "$(POD_NAME).{{ if eq $role "data" }}{{ include "uhlp.redis.fullname" $root }}{{ else }}{{ include "uhlp.redis.sentinelName" $root }}{{ end }}-headless.{{ $root.Release.Namespace }}.svc"
    - name: UHLP_REDIS_INIT_FIRST
      value: {{ include "uhlp.redis.podHost" (list $root 0) | quote }}
    - name: UHLP_REDIS_INIT_SENTINELS
      value: {{ include "uhlp.redis.sentinelHosts" $root | quote }}
    - name: UHLP_REDIS_INIT_MASTER_NAME
      value: {{ $redis.sentinel.masterName | quote }}
    - name: UHLP_REDIS_INIT_PORT
      value: {{ if eq $role "data" }}"6379"{{ else }}"26379"{{ end }}
    - name: UHLP_REDIS_INIT_OUT
      value: {{ if eq $role "data" }}/conf/redis.conf{{ else }}/data/sentinel.conf{{ end }}
    - name: UHLP_REDIS_INIT_DOWN_AFTER_MS
      value: {{ $redis.sentinel.downAfterMs | quote }}
    - name: UHLP_REDIS_INIT_FAILOVER_TIMEOUT_MS
      value: {{ $redis.sentinel.failoverTimeoutMs | quote }}
    {{- if $redis.tls.enabled }}
    # TLS only: the configs listen on tls-port alone, and the step asks the sentinels over TLS.
    - name: UHLP_REDIS_INIT_TLS_DIR
      value: /tls
    {{- end }}
    {{- if $redis.auth.existingSecret }}
    - name: UHLP_REDIS_INIT_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ $redis.auth.existingSecret }}
          key: {{ $redis.auth.secretKey }}
    {{- end }}
  securityContext:
    {{- include "uhlp.containerSecurityContext" $root | nindent 4 }}
  resources:
    requests: { cpu: 10m, memory: 32Mi, ephemeral-storage: 1Mi }
    limits: { memory: 128Mi, ephemeral-storage: 16Mi }
  volumeMounts:
    - name: init-script
      mountPath: /scripts
      readOnly: true
    - name: {{ if eq $role "data" }}conf{{ else }}data{{ end }}
      mountPath: {{ if eq $role "data" }}/conf{{ else }}/data{{ end }}
    {{- if $redis.tls.enabled }}
    - name: tls
      mountPath: /tls
      readOnly: true
    {{- end }}
{{- end }}

{{/* The bundled Redis's certificate, key and CA under fixed names (/tls/tls.crt, tls.key, ca.crt), readable by the pods' group only. */}}
{{- define "uhlp.redis.tlsVolume" -}}
{{- $tls := .Values.redis.bundled.tls -}}
- name: tls
  secret:
    secretName: {{ $tls.existingSecret }}
    # 0440, written in decimal: YAML 1.1 and 1.2 read a leading 0 differently.
    defaultMode: 288
    items:
      - key: {{ $tls.certKey }}
        path: tls.crt
      - key: {{ $tls.keyKey }}
        path: tls.key
      - key: {{ $tls.caKey }}
        path: ca.crt
{{- end }}

{{/* The readiness probe's redis-cli on a bundled pod (port: 6379 or 26379), over TLS when the pods listen with TLS only. */}}
{{- define "uhlp.redis.pingProbe" -}}
{{- $root := index . 0 }}{{ $port := index . 1 -}}
exec:
  command: [/usr/bin/redis-cli, -e, -p, {{ $port | quote }}{{ if and $root.Values.redis.bundled.sentinel.enabled $root.Values.redis.bundled.tls.enabled }}, --tls, --cacert, /tls/ca.crt{{ end }}, ping]
periodSeconds: 5
{{- end }}

{{/* Refuses two state sources at once: the core takes one. */}}
{{- define "uhlp.validate" -}}
{{- if and .Values.redis.bundled.enabled .Values.redis.external.url.existingSecret }}
{{- fail "redis.bundled.enabled and redis.external.url.existingSecret are exclusive: the core uses one runtime state store" }}
{{- end }}
{{- if and .Values.redis.external.sentinel.masterName (or .Values.redis.bundled.enabled .Values.redis.external.url.existingSecret) }}
{{- fail "redis.external.sentinel.masterName is exclusive with redis.bundled.enabled and redis.external.url.existingSecret: the core uses one runtime state store" }}
{{- end }}
{{- if and .Values.redis.bundled.sentinel.enabled (not .Values.redis.bundled.enabled) }}
{{- fail "redis.bundled.sentinel.enabled needs redis.bundled.enabled: the sentinels watch the bundled Redis" }}
{{- end }}
{{- if and .Values.redis.bundled.tls.enabled (not .Values.redis.bundled.sentinel.enabled) }}
{{- fail "redis.bundled.tls.enabled needs redis.bundled.sentinel.enabled: TLS is for the bundled Sentinel" }}
{{- end }}
{{- if and .Values.redis.bundled.tls.enabled (not .Values.redis.bundled.tls.existingSecret) }}
{{- fail "redis.bundled.tls.enabled needs redis.bundled.tls.existingSecret (the certificate, its key and the CA)" }}
{{- end }}
{{- if and .Values.redis.external.sentinel.masterName (not .Values.redis.external.sentinel.sentinels) }}
{{- fail "redis.external.sentinel.masterName needs redis.external.sentinel.sentinels (host:port of each sentinel)" }}
{{- end }}
{{- if and .Values.redis.external.cluster.nodes (or .Values.redis.bundled.enabled .Values.redis.external.url.existingSecret .Values.redis.external.sentinel.masterName) }}
{{- fail "redis.external.cluster.nodes is exclusive with redis.bundled.enabled, redis.external.url.existingSecret and redis.external.sentinel.masterName: the core uses one runtime state store" }}
{{- end }}
{{- if and .Values.redis.external.cluster.nodes .Values.redis.replicaAcks }}
{{- fail "redis.replicaAcks must be 0 with redis.external.cluster: replica acknowledgements are not supported on Redis Cluster yet" }}
{{- end }}
{{- if and .Values.redis.external.sentinel.servername (not .Values.redis.external.sentinel.tls) }}
{{- fail "redis.external.sentinel.servername needs redis.external.sentinel.tls" }}
{{- end }}
{{- if and .Values.redis.external.sentinel.ca.existingSecret (not .Values.redis.external.sentinel.tls) }}
{{- fail "redis.external.sentinel.ca needs redis.external.sentinel.tls" }}
{{- end }}
{{- if and .Values.redis.external.cluster.ca.existingSecret (not .Values.redis.external.cluster.tls) }}
{{- fail "redis.external.cluster.ca needs redis.external.cluster.tls" }}
{{- end }}
{{- if and .Values.redis.external.cluster.servername (not .Values.redis.external.cluster.tls) }}
{{- fail "redis.external.cluster.servername needs redis.external.cluster.tls" }}
{{- end }}
{{- end }}
