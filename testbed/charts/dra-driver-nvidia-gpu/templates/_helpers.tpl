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

{{/* resource.k8s.io version: the value, else the newest the cluster serves. */}}
{{- define "dra-driver-nvidia-gpu.resourceApiVersion" -}}
{{- if .Values.resourceApiVersion }}
{{- .Values.resourceApiVersion }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceClass" }}
{{- "resource.k8s.io/v1" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2/DeviceClass" }}
{{- "resource.k8s.io/v1beta2" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta1/DeviceClass" }}
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
