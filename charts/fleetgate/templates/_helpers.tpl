{{/* Names, labels and the rules every topology shares. */}}

{{- define "fleetgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fleetgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fleetgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "fleetgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: dict "root" $ "component" "gateway|facade|cache". */}}
{{- define "fleetgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fleetgate.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The components this topology runs, in order: the user-facing one first. */}}
{{- define "fleetgate.components" -}}
{{- if eq .Values.topology "split" -}}facade cache{{- else -}}gateway{{- end -}}
{{- end -}}

{{/* Object name of a component: the user-facing one keeps the full name, so clients see one name in both topologies. */}}
{{- define "fleetgate.componentName" -}}
{{- if eq .component "cache" -}}
{{- printf "%s-cache" (include "fleetgate.fullname" .root) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- include "fleetgate.fullname" .root -}}
{{- end -}}
{{- end -}}

{{- define "fleetgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "fleetgate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "fleetgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Secret names: the existing one, or the one this chart renders from inline values. */}}
{{- define "fleetgate.servingSecret" -}}
{{- default (printf "%s-serving" (include "fleetgate.fullname" .)) .Values.servingCert.existingSecret -}}
{{- end -}}
{{- define "fleetgate.clientCASecret" -}}
{{- default (printf "%s-client-ca" (include "fleetgate.fullname" .)) .Values.clientCA.existingSecret -}}
{{- end -}}
{{- define "fleetgate.controlPlaneSecret" -}}
{{- default (printf "%s-control-plane" (include "fleetgate.fullname" .)) .Values.controlPlane.existingSecret -}}
{{- end -}}
{{- define "fleetgate.membersSecret" -}}
{{- default (printf "%s-members" (include "fleetgate.fullname" .)) .Values.members.existingSecret -}}
{{- end -}}
{{- define "fleetgate.facadeSecret" -}}
{{- default (printf "%s-cache-service" (include "fleetgate.fullname" .)) .Values.cacheService.facadeKubeconfig.existingSecret -}}
{{- end -}}

{{/* Key names inside the Secrets this chart renders itself. */}}
{{- define "fleetgate.servingCertKey" -}}{{ if .Values.servingCert.existingSecret }}{{ .Values.servingCert.certKey }}{{ else }}tls.crt{{ end }}{{- end -}}
{{- define "fleetgate.servingKeyKey" -}}{{ if .Values.servingCert.existingSecret }}{{ .Values.servingCert.keyKey }}{{ else }}tls.key{{ end }}{{- end -}}
{{- define "fleetgate.clientCACertKey" -}}{{ if .Values.clientCA.existingSecret }}{{ .Values.clientCA.certKey }}{{ else }}client-ca.crt{{ end }}{{- end -}}
{{- define "fleetgate.clientCACrlKey" -}}{{ if .Values.clientCA.existingSecret }}{{ .Values.clientCA.crlKey }}{{ else }}client-ca.crl{{ end }}{{- end -}}
{{- define "fleetgate.controlPlaneKey" -}}{{ if .Values.controlPlane.existingSecret }}{{ .Values.controlPlane.key }}{{ else }}kubeconfig{{ end }}{{- end -}}
{{- define "fleetgate.facadeKey" -}}{{ if .Values.cacheService.facadeKubeconfig.existingSecret }}{{ .Values.cacheService.facadeKubeconfig.key }}{{ else }}kubeconfig{{ end }}{{- end -}}

{{/* Components that cache members: the gateway (single) or the cache (split). */}}
{{- define "fleetgate.hasMembers" -}}
{{- if ne .component "facade" -}}true{{- end -}}
{{- end -}}

{{/*
Everything a release cannot work without, checked before anything is rendered, one message each. Keys are never
generated here: they come from an existing Secret or from the user's own files.
*/}}
{{- define "fleetgate.validate" -}}
{{- if not (or .Values.servingCert.existingSecret (and .Values.servingCert.cert .Values.servingCert.key)) -}}
{{- fail "fleetgate: the serving certificate is missing: set servingCert.existingSecret (a Secret with tls.crt and tls.key), or servingCert.cert and servingCert.key (--set-file servingCert.cert=certs/serving.crt --set-file servingCert.key=certs/serving.key)" -}}
{{- end -}}
{{- if and .Values.clientCA.enabled (not (or .Values.clientCA.existingSecret .Values.clientCA.cert)) -}}
{{- fail "fleetgate: the client CA is missing: set clientCA.existingSecret (a Secret with client-ca.crt), or clientCA.cert (--set-file clientCA.cert=certs/client-ca.crt), or clientCA.enabled=false to accept no client certificates" -}}
{{- end -}}
{{- if and (not .Values.clientCA.enabled) (not (or .Values.config.authentication.oidc .Values.config.authentication.anonymous.enabled)) -}}
{{- fail "fleetgate: no way to authenticate: with clientCA.enabled=false configure config.authentication.oidc" -}}
{{- end -}}
{{- if not (or .Values.controlPlane.existingSecret .Values.controlPlane.kubeconfig) -}}
{{- fail "fleetgate: the control plane kubeconfig is missing: set controlPlane.existingSecret (a Secret with key kubeconfig), or controlPlane.kubeconfig (--set-file controlPlane.kubeconfig=certs/control-plane.kubeconfig)" -}}
{{- end -}}
{{- if and (eq .Values.topology "split") (not (or .Values.cacheService.facadeKubeconfig.existingSecret .Values.cacheService.facadeKubeconfig.kubeconfig)) -}}
{{- fail "fleetgate: topology split needs the facades' kubeconfig for the cache Service: set cacheService.facadeKubeconfig.existingSecret or cacheService.facadeKubeconfig.kubeconfig (--set-file)" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $m := .Values.members.static -}}
{{- if hasKey $seen $m.name -}}
{{- fail (printf "fleetgate: members.static[%d].name %q is used twice; member names must be unique" $i $m.name) -}}
{{- end -}}
{{- $_ := set $seen $m.name true -}}
{{- if and $.Values.members.existingSecret $m.kubeconfig -}}
{{- fail (printf "fleetgate: members.static[%d] (%s) has an inline kubeconfig, but members.existingSecret is set: put it in that Secret under %s.kubeconfig, or leave members.existingSecret empty" $i $m.name $m.name) -}}
{{- end -}}
{{- if not (or $.Values.members.existingSecret $m.kubeconfig) -}}
{{- fail (printf "fleetgate: members.static[%d] (%s) has no kubeconfig: set members.static[%d].kubeconfig (--set-file) or members.existingSecret (key %s.kubeconfig)" $i $m.name $i $m.name) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.serviceMonitor.tlsSecret) -}}
{{- fail "fleetgate: serviceMonitor.enabled needs serviceMonitor.tlsSecret: a Secret with tls.crt, tls.key (a client certificate allowed to get /metrics) and ca.crt (the serving CA)" -}}
{{- end -}}
{{- end -}}

{{/*
The gateway's config.yaml for one component (dict "root" $ "component" ...): the user's config with the paths,
port and topology this chart owns laid over it.
*/}}
{{- define "fleetgate.config" -}}
{{- $v := .root.Values -}}
{{- $cfg := deepCopy $v.config -}}
{{- $tls := dict "certFile" (printf "/etc/fleetgate/serving/%s" (include "fleetgate.servingCertKey" .root)) "keyFile" (printf "/etc/fleetgate/serving/%s" (include "fleetgate.servingKeyKey" .root)) -}}
{{- if $v.clientCA.enabled -}}
{{- $_ := set $tls "clientCAFile" (printf "/etc/fleetgate/client-ca/%s" (include "fleetgate.clientCACertKey" .root)) -}}
{{- $_ := set $tls "clientCRLFile" (printf "/etc/fleetgate/client-ca/%s" (include "fleetgate.clientCACrlKey" .root)) -}}
{{- end -}}
{{- $mode := "all" -}}
{{- if eq .component "facade" }}{{ $mode = "facade" }}{{ else if eq .component "cache" }}{{ $mode = "cache" }}{{ end -}}
{{- $cache := dict "mode" $mode -}}
{{- if include "fleetgate.hasMembers" . -}}
{{- $members := list -}}
{{- range $v.members.static -}}
{{- $members = append $members (dict "name" .name "kubeconfig" (printf "/etc/fleetgate/members/%s.kubeconfig" .name) "context" (default "" .context)) -}}
{{- end -}}
{{- $_ := set $cache "members" $members -}}
{{- $_ := set $cache "karmada" (dict "enabled" $v.members.karmada.enabled) -}}
{{- else -}}
{{- $_ := set $cache "facade" (dict "kubeconfig" (printf "/etc/fleetgate/cache-service/%s" (include "fleetgate.facadeKey" .root)) "context" $v.cacheService.facadeKubeconfig.context) -}}
{{- end -}}
{{- $audit := dict "policyFile" "/etc/fleetgate/audit/audit-policy.yaml" -}}
{{- if $v.auditLog.enabled -}}
{{- $_ := set $audit "log" (dict "path" "/var/log/fleetgate/audit.log" "maxSizeBytes" $v.auditLog.maxSizeBytes "maxBackups" $v.auditLog.maxBackups) -}}
{{- else if and $cfg.audit (hasKey $cfg.audit "log") -}}
{{- $_ := unset $cfg.audit "log" -}}
{{- end -}}
{{- $managed := dict
  "server" (dict "port" 6443 "tls" $tls)
  "controlPlane" (dict "kubeconfig" (printf "/etc/fleetgate/control-plane/%s" (include "fleetgate.controlPlaneKey" .root)) "context" $v.controlPlane.context)
  "cache" $cache
  "audit" $audit
  "flowControl" (dict "configDir" "/etc/fleetgate/flowcontrol")
-}}
{{- if and $cfg.server $cfg.server.tls -}}{{- $_ := unset $cfg.server "tls" -}}{{- end -}}
{{- toYaml (mustMergeOverwrite $cfg $managed) -}}
{{- end -}}

{{- define "fleetgate.auditPolicy" -}}
{{- if .Values.auditPolicy -}}{{ .Values.auditPolicy }}{{- else -}}{{ .Files.Get "files/audit-policy.yaml" }}{{- end -}}
{{- end -}}

{{- define "fleetgate.flowControlFiles" -}}
{{- if .Values.flowControlFiles -}}
{{- toYaml .Values.flowControlFiles -}}
{{- else -}}
{{- $files := dict -}}
{{- range $path, $_ := .Files.Glob "files/flowcontrol/*.yaml" -}}
{{- $_ := set $files (base $path) ($.Files.Get $path) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}
{{- end -}}
