{{/* The image of every gpunode container. */}}
{{- define "gpunode.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end -}}

{{/* The labels Helm's objects carry: which release and chart made them. */}}
{{- define "gpunode.chartLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* Metadata labels of a role's workload and Service: ( list $ "gpunode-device-plugin" ). */}}
{{- define "gpunode.labels" -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/part-of: gpunode
{{ include "gpunode.chartLabels" (index . 0) }}
{{- end -}}

{{/* Labels of a role's pods (the selector's, plus part-of). */}}
{{- define "gpunode.podLabels" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: gpunode
{{- end -}}

{{/*
Checks config.default against config.map. A node without the nvidia.com/device-plugin.config
label runs config.default, else a config named "default", else the only one: the plugin picks
them in that order, as NVIDIA's config-manager does with its default fallback strategies.
*/}}
{{- define "gpunode.checkConfigDefault" -}}
{{- $map := .Values.config.map | default dict -}}
{{- if and .Values.config.map .Values.config.name -}}
{{- fail "config.map and config.name: give one; config.name names an existing ConfigMap of configs, config.map makes one" -}}
{{- end -}}
{{- if and $map .Values.config.default (not (hasKey $map .Values.config.default)) -}}
{{- fail (printf "config.default: %q is not a key of config.map (%s); name one of them" .Values.config.default (keys $map | sortAlpha | join ", ")) -}}
{{- end -}}
{{- if and (gt (len $map) 1) (not .Values.config.default) (not (hasKey $map "default")) -}}
{{- fail (printf "config.default: empty, and config.map has several configs (%s) none named default; set config.default to the one nodes without the nvidia.com/device-plugin.config label run" (keys $map | sortAlpha | join ", ")) -}}
{{- end -}}
{{- end -}}

{{/* "true" when a ConfigMap of configs is mounted (config.map or config.name). */}}
{{- define "gpunode.hasConfig" -}}
{{- if or .Values.config.map .Values.config.name -}}true{{- end -}}
{{- end -}}

{{/* The ConfigMap of configs: config.name, or the chart's own. */}}
{{- define "gpunode.configMapName" -}}
{{- .Values.config.name | default "gpunode-device-plugin-configs" -}}
{{- end -}}

{{/* "true" when the MPS control daemon runs: mps.enabled, else any config of config.map sharing through MPS. */}}
{{- define "gpunode.mpsEnabled" -}}
{{- if kindIs "bool" .Values.mps.enabled -}}
{{- if .Values.mps.enabled -}}true{{- end -}}
{{- else -}}
{{- range $name, $text := (.Values.config.map | default dict) -}}
{{- $config := fromYaml $text -}}
{{- if hasKey $config "Error" -}}
{{- fail (printf "config.map.%s: not a device plugin config (a YAML mapping, version: v1 ...): %s" $name (get $config "Error")) -}}
{{- end -}}
{{- if and $config.sharing (hasKey $config.sharing "mps") -}}true{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The node selector of a role: ROLE.nodeSelector over the top-level nodeSelector: ( list $ "draPlugin" ). */}}
{{- define "gpunode.nodeSelector" -}}
{{- $ := index . 0 -}}
{{- $own := (get $.Values (index . 1)).nodeSelector | default dict -}}
{{- with merge (dict) $own ($.Values.nodeSelector | default dict) -}}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/*
Refuses the device plugin and the DRA plugin on the same nodes: NVIDIA says the two must never
serve one node (each would hand out the same GPUs; gpunode's DRA plugin exits beside a device
plugin). They are kept apart when their node selectors give one label different values (one
node pool each), or when the DRA plugin asks for nvidia.com/gpu.deploy.device-plugin=false,
which the device plugin's default affinity leaves out (docs/DRA.md, the migration node by node).
*/}}
{{- define "gpunode.checkDraPlugin" -}}
{{- if and .Values.draPlugin.enabled .Values.devicePlugin.enabled -}}
{{- $plugin := include "gpunode.nodeSelector" (list . "devicePlugin") | fromYaml -}}
{{- $dra := include "gpunode.nodeSelector" (list . "draPlugin") | fromYaml -}}
{{- $apart := false -}}
{{- range $key, $value := $dra -}}
{{- if and (hasKey $plugin $key) (ne (toString (get $plugin $key)) (toString $value)) -}}
{{- $apart = true -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.affinity) (eq (toString (get $dra "nvidia.com/gpu.deploy.device-plugin")) "false") -}}
{{- $apart = true -}}
{{- end -}}
{{- if not $apart -}}
{{- fail "draPlugin.enabled and devicePlugin.enabled: both on with nothing keeping them off the same node, and a device plugin and a DRA plugin must never serve one node; give each a nodeSelector for its node pool (devicePlugin.nodeSelector and draPlugin.nodeSelector with different values of one label), or set devicePlugin.enabled=false" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The node affinity of the GPU roles: affinity, else a node with one of gpuNodeLabels, not paused for a MIG change by DEPLOYKEY. */}}
{{- define "gpunode.affinity" -}}
{{- $ := index . 0 -}}
{{- $deploy := index . 1 -}}
{{- if $.Values.affinity -}}
{{ toYaml $.Values.affinity }}
{{- else -}}
{{- if not $.Values.gpuNodeLabels -}}
{{- fail "gpuNodeLabels: empty, and no affinity; name the label that marks a GPU node (KEY=VALUE), such as nvidia.com/gpu.present=true" -}}
{{- end -}}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    # Any one of gpuNodeLabels marks a GPU node (by default nvidia.com/gpu.present=true, which the
    # labeller sets, or NFD's PCI label). `gpunode mig manager` pauses the role on a node while it
    # changes the MIG layout.
    nodeSelectorTerms:
      {{- range $.Values.gpuNodeLabels }}
      {{- $label := splitn "=" 2 . }}
      - matchExpressions:
          - {key: {{ $label._0 | quote }}, operator: In, values: [{{ $label._1 | quote }}]}
          - {key: {{ $deploy }}, operator: NotIn, values: ["paused-for-mig-change", "false"]}
      {{- end }}
{{- end -}}
{{- end -}}

{{/*
The environment of the config every pod of the node shares (plugin, MPS control daemon,
labeller): the configs' directory, the default config and the node whose label picks one, and
the MIG strategy.
*/}}
{{- define "gpunode.configEnv" -}}
{{- if not (kindIs "invalid" .Values.migStrategy) }}
- {name: MIG_STRATEGY, value: {{ .Values.migStrategy | quote }}}
{{- end }}
{{- if include "gpunode.hasConfig" . }}
- {name: CONFIG_FILE, value: /config}
{{- with .Values.config.default }}
- {name: CONFIG_DEFAULT, value: {{ . | quote }}}
{{- end }}
- name: NODE_NAME
  valueFrom:
    fieldRef: {fieldPath: spec.nodeName}
{{- end }}
{{- if include "gpunode.mpsEnabled" . }}
- {name: MPS_ROOT, value: {{ .Values.mps.root | quote }}}
{{- end }}
{{- end -}}

{{/* The plugin's environment from NVIDIA's chart's values that are set (null: left out). */}}
{{- define "gpunode.pluginEnv" -}}
{{- include "gpunode.configEnv" . }}
{{- if not (kindIs "invalid" .Values.failOnInitError) }}
- {name: FAIL_ON_INIT_ERROR, value: {{ .Values.failOnInitError | quote }}}
{{- end }}
{{- if not (kindIs "invalid" .Values.deviceListStrategy) }}
{{- $list := .Values.deviceListStrategy }}
{{- if kindIs "string" $list }}{{ $list = list $list }}{{ end }}
- {name: DEVICE_LIST_STRATEGY, value: {{ join "," $list | quote }}}
{{- end }}
{{- if not (kindIs "invalid" .Values.deviceIDStrategy) }}
- {name: DEVICE_ID_STRATEGY, value: {{ .Values.deviceIDStrategy | quote }}}
{{- end }}
{{- if not (kindIs "invalid" .Values.nvidiaDriverRoot) }}
- {name: NVIDIA_DRIVER_ROOT, value: {{ .Values.nvidiaDriverRoot | quote }}}
{{- end }}
{{- if not (kindIs "invalid" .Values.compatWithCPUManager) }}
- {name: PASS_DEVICE_SPECS, value: {{ .Values.compatWithCPUManager | quote }}}
{{- end }}
{{- end -}}

{{/*
The objects of a manifest of deploy/ (a file under files/ linked to it), moved into the release's
namespace and labelled as the chart's: ( list $ "files/upgrade-rbac.yaml" ). An optional third
item lists patch files of deploy/ (as a kustomization's `patches` names them), each applied as a
merge patch to the object of its kind and name: ( list $ "files/dra-deviceclasses.yaml"
(list "files/dra-extended-resource-off.yaml") ).
One source for both: kustomize applies the file, the chart renders it.
*/}}
{{- define "gpunode.fromDeploy" -}}
{{- $ := index . 0 -}}
{{- $patches := list -}}
{{- if gt (len .) 2 }}
{{- range $file := index . 2 }}
{{- range $text := regexSplit "(?m)^---\\s*$" ($.Files.Get $file) -1 }}
{{- with fromYaml $text }}{{ $patches = append $patches . }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- range $i, $text := regexSplit "(?m)^---\\s*$" ($.Files.Get (index . 1)) -1 }}
{{- $object := fromYaml $text }}
{{- if $object }}
{{- range $patch := $patches }}
{{- if and (eq $patch.kind $object.kind) (eq $patch.metadata.name $object.metadata.name) }}
{{- include "gpunode.mergePatch" (list $object $patch) }}
{{- end }}
{{- end }}
{{- if hasKey $object.metadata "namespace" }}
{{- $_ := set $object.metadata "namespace" $.Release.Namespace }}
{{- end }}
{{- $labels := merge (fromYaml (include "gpunode.chartLabels" $)) ($object.metadata.labels | default dict) }}
{{- $_ := set $object.metadata "labels" $labels }}
{{- range $object.subjects | default list }}
{{- $_ := set . "namespace" $.Release.Namespace }}
{{- end }}
---
{{ toYaml $object }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Applies a merge patch to an object in place: ( list OBJECT PATCH ). A null in the patch removes
the key (as in kustomize's patches), a mapping merges into the mapping it meets, anything else
replaces.
*/}}
{{- define "gpunode.mergePatch" -}}
{{- $object := index . 0 -}}
{{- range $key, $value := index . 1 -}}
{{- if kindIs "invalid" $value -}}
{{- $_ := unset $object $key -}}
{{- else if and (kindIs "map" $value) (kindIs "map" (get $object $key)) -}}
{{- include "gpunode.mergePatch" (list (get $object $key) $value) -}}
{{- else -}}
{{- $_ := set $object $key $value -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A webhook's clientConfig: ( dict "ns" NAMESPACE "path" PATH "ca" CABUNDLE ). */}}
{{- define "gpunode.webhookClient" -}}
service:
  namespace: {{ .ns }}
  name: gpunode-webhook
  path: {{ .path }}
  port: 443
caBundle: {{ .ca | quote }}
{{- end }}
