{{/* SIMULATION chart (gpupool test bed), not NVIDIA's. Helper names follow the real chart's. */}}

{{- define "dra-driver-nvidia-gpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.labels" -}}
helm.sh/chart: {{ include "dra-driver-nvidia-gpu.chart" . }}
app.kubernetes.io/name: {{ include "dra-driver-nvidia-gpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.templateLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* dict "context" . "componentName" "kubelet-plugin" */}}
{{- define "dra-driver-nvidia-gpu.selectorLabels" -}}
{{- if .context.Values.selectorLabelsOverride -}}
{{- toYaml .context.Values.selectorLabelsOverride }}
{{- else -}}
app.kubernetes.io/name: {{ include "dra-driver-nvidia-gpu.name" .context }}
app.kubernetes.io/instance: {{ .context.Release.Name }}
{{- end }}
dra-driver-nvidia-gpu-component: {{ .componentName }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.fullimage" -}}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dra-driver-nvidia-gpu.name" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* resource.k8s.io version: the value, else the newest the cluster serves. Asked by group/version, as
     the real chart does (helm's default capabilities for `helm template` list group/versions only). */}}
{{- define "dra-driver-nvidia-gpu.resourceApiVersion" -}}
{{- if .Values.resourceApiVersion }}
{{- .Values.resourceApiVersion }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1" }}
{{- "resource.k8s.io/v1" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2" }}
{{- "resource.k8s.io/v1beta2" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta1" }}
{{- "resource.k8s.io/v1beta1" }}
{{- end }}
{{- end }}

{{/* FEATURE_GATES as the real chart renders it: "K=V," per gate. */}}
{{- define "dra-driver-nvidia-gpu.featureGatesEnv" -}}
{{- if .Values.featureGates }}
- name: FEATURE_GATES
  value: "{{ range $key, $value := .Values.featureGates }}{{ $key }}={{ $value }},{{ end }}"
{{- end }}
{{- end }}

{{/* "true" when this package is the 0.5 line (the same source is packaged as 0.4.1 and 0.5.1). */}}
{{- define "dra-driver-nvidia-gpu.v05" -}}
{{- if semverCompare ">=0.5.0-0" .Chart.Version }}true{{ end }}
{{- end }}

{{/* 0.5: "true" when resources.computeDomains.imex.mode is hostManaged (0.4 has no such value). */}}
{{- define "dra-driver-nvidia-gpu.hostManagedIMEX" -}}
{{- if and (include "dra-driver-nvidia-gpu.v05" .) (eq (toString (dig "mode" "" (.Values.resources.computeDomains.imex | default dict))) "hostManaged") }}true{{ end }}
{{- end }}

{{/* 0.5: the IMEX mode/isolation rules the real chart checks at render time (main 95932046
     validateIMEXConfig, included by kubeletplugin.yaml and controller.yaml when computeDomains is on):
     hostManaged without featureGates.HostManagedIMEXDaemon=true fails; isolation "channel" is not
     implemented; other values are unknown. Renders nothing on success; nothing at all on 0.4. */}}
{{- define "dra-driver-nvidia-gpu.validateIMEXConfig" -}}
{{- if include "dra-driver-nvidia-gpu.v05" . }}
{{- $imex := .Values.resources.computeDomains.imex | default dict }}
{{- $mode := toString (dig "mode" "driverManaged" $imex) }}
{{- $isolation := toString (dig "isolation" "domain" $imex) }}
{{- $gate := and .Values.featureGates (hasKey .Values.featureGates "HostManagedIMEXDaemon") .Values.featureGates.HostManagedIMEXDaemon }}
{{- if eq $mode "hostManaged" }}
{{- if not $gate }}
{{- fail "resources.computeDomains.imex.mode=hostManaged requires featureGates.HostManagedIMEXDaemon=true" }}
{{- end }}
{{- else if ne $mode "driverManaged" }}
{{- fail (printf "unknown resources.computeDomains.imex.mode %q: must be \"driverManaged\" or \"hostManaged\"" $mode) }}
{{- end }}
{{- if eq $isolation "channel" }}
{{- fail "resources.computeDomains.imex.isolation=channel is not supported yet: per-workload IMEX channels are not implemented; use the default, \"domain\"" }}
{{- else if and (ne $isolation "") (ne $isolation "domain") }}
{{- fail (printf "unknown resources.computeDomains.imex.isolation %q: must be \"domain\" or \"channel\"" $isolation) }}
{{- end }}
{{- end }}
{{- end }}

{{/* 0.5: the IMEX env of the controller and the compute-domain plugin. */}}
{{- define "dra-driver-nvidia-gpu.imexEnv" -}}
{{- if include "dra-driver-nvidia-gpu.v05" . }}
- name: IMEX_MODE
  value: {{ .Values.resources.computeDomains.imex.mode | quote }}
- name: IMEX_ISOLATION
  value: {{ .Values.resources.computeDomains.imex.isolation | quote }}
{{- end }}
{{- end }}
