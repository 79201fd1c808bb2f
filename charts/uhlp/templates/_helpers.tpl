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

{{- define "uhlp.image" -}}
{{- printf "%s:%s" .repository .tag }}
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

{{/* Refuses two state sources at once: the core takes one. */}}
{{- define "uhlp.validate" -}}
{{- if and .Values.redis.bundled.enabled .Values.redis.external.url.existingSecret }}
{{- fail "redis.bundled.enabled and redis.external.url.existingSecret are exclusive: the core uses one runtime state store" }}
{{- end }}
{{- end }}
