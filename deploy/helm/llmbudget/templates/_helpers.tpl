{{/* The chart's name, used as app.kubernetes.io/name. */}}
{{- define "llmbudget.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of the namespaced objects (Deployment, Service, ...): the release name when it
contains the chart name (`helm install llmbudget ...` gives "llmbudget", as in deploy/),
otherwise <release>-llmbudget.
*/}}
{{- define "llmbudget.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Labels of every object: the two that deploy/ sets, plus Helm's standard ones
(helm.sh/chart, app.kubernetes.io/managed-by, instance and version).
*/}}
{{- define "llmbudget.labels" -}}
{{ include "llmbudget.selectorLabels" . }}
app.kubernetes.io/part-of: llmbudget
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/*
Selector labels: only the name, as in deploy/, so a kustomize install can be taken over by
the chart (Deployment selectors are immutable). One release per cluster: the CRD and the
controllers are cluster-wide anyway.
*/}}
{{- define "llmbudget.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llmbudget.name" . }}
{{- end -}}

{{/* Labels of the Pods: as in deploy/. */}}
{{- define "llmbudget.podLabels" -}}
{{ include "llmbudget.selectorLabels" . }}
app.kubernetes.io/part-of: llmbudget
{{- end -}}

{{/* The hook base URL Metacontroller calls. */}}
{{- define "llmbudget.hookURL" -}}
{{- if .Values.tls.enabled -}}
https://{{ include "llmbudget.fullname" . }}.{{ .Release.Namespace }}.svc
{{- else -}}
http://{{ include "llmbudget.fullname" . }}.{{ .Release.Namespace }}
{{- end -}}
{{- end -}}

{{/* The port name of the container and the Service. */}}
{{- define "llmbudget.portName" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end -}}
{{- end -}}

{{/* Whether Metacontroller must read Secrets (token, or the CA from a Secret). */}}
{{- define "llmbudget.readsSecrets" -}}
{{- if or .Values.token.enabled (and .Values.tls.enabled (not .Values.tls.caBundle)) }}true{{ end -}}
{{- end -}}

{{/*
One webhook: the URL for `path` plus caBundle and authorization as configured.
Called with (dict "root" $ "path" "/budget/sync").
*/}}
{{- define "llmbudget.webhook" -}}
{{- $root := .root -}}
url: {{ include "llmbudget.hookURL" $root }}{{ .path }}
{{- if $root.Values.tls.enabled }}
caBundle:
{{- if $root.Values.tls.caBundle }}
  inline: {{ $root.Values.tls.caBundle | quote }}
{{- else }}
  secretRef:
    name: {{ $root.Values.tls.secretName }}
    namespace: {{ $root.Release.Namespace }}
    key: ca.crt
{{- end }}
{{- end }}
{{- if $root.Values.token.enabled }}
authorization:
  type: Bearer
  secretRef:
    name: {{ $root.Values.token.secretName }}
    namespace: {{ $root.Release.Namespace }}
    key: {{ $root.Values.token.key }}
{{- end }}
{{- end -}}

{{/* Helm's standard labels alone, for objects whose name label is not the chart's (authz). */}}
{{- define "llmbudget.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Labels of authz's objects and Pods: as in deploy/components/authz. */}}
{{- define "llmbudget.authzLabels" -}}
app.kubernetes.io/name: {{ include "llmbudget.name" . }}-authz
app.kubernetes.io/part-of: llmbudget
app.kubernetes.io/component: authz
{{- end -}}

{{- /* The spend writer's labels, as deploy/components/spend-writer labels its Deployment, Pods, Service and
NetworkPolicy: a name of its own, so that the hook Service never selects its Pods. */}}
{{- define "llmbudget.spendWriterLabels" -}}
app.kubernetes.io/name: {{ include "llmbudget.name" . }}-spend-writer
app.kubernetes.io/part-of: llmbudget
app.kubernetes.io/component: spend-writer
{{- end -}}

{{- /* The admission check controller's labels: a name of its own, so that the hook Service never selects its Pods. */}}
{{- define "llmbudget.admissionCheckLabels" -}}
app.kubernetes.io/name: {{ include "llmbudget.name" . }}-admission-check
app.kubernetes.io/part-of: llmbudget
app.kubernetes.io/component: admission-check
{{- end -}}
