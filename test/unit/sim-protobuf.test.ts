// Protobuf request bodies as kubectl 1.33 sends them, decoded into the JSON the same client writes for the same
// object. The bodies are real bytes: kubectl's were recorded by an HTTPS proxy in front of a sim cluster, the last
// five come from k8s.io/apimachinery v0.34.4's protobuf serializer. Each `want` is that client's own JSON (kubectl
// --dry-run=client -o json, or Go's encoding/json), less `creationTimestamp: null`, which apimachinery 1.34 omits.

import { describe, expect, it } from 'vitest';
import { decodeProtobufObject } from '../sim/protobuf.js';

interface Fixture {
  by: string;
  body: string;
  want: object;
}

const FIXTURES: Fixture[] = [
  {
    by: "kubectl create configmap cm1 --from-literal=a=1 --from-literal=b=two",
    body: "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEicKEwoDY20xEgAaACIAKgAyADgAQgASBgoBYRIBMRIICgFiEgN0d28aACIA",
    want: {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"a":"1","b":"two"}},
  },
  {
    by: "kubectl create configmap cm2 --from-file=bin=bin.dat --from-file=t.txt",
    body: "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEjcKEwoDY20yEgAaACIAKgAyADgAQgASDgoFdC50eHQSBXRleHQKGhAKA2JpbhIJAP/+YmluYXJ5GgAiAA==",
    want: {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm2"},"data":{"t.txt":"text\n"},"binaryData":{"bin":"AP/+YmluYXJ5"}},
  },
  {
    by: "kubectl create secret generic s1 --from-literal=k=v --type=Opaque",
    body: "azhzAAoMCgJ2MRIGU2VjcmV0EiQKEgoCczESABoAIgAqADIAOABCABIGCgFrEgF2GgZPcGFxdWUaACIA",
    want: {"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"data":{"k":"dg=="},"type":"Opaque"},
  },
  {
    by: "kubectl create secret docker-registry s2 --docker-username=u --docker-password=p --docker-server=r.example",
    body: "azhzAAoMCgJ2MRIGU2VjcmV0EpABChIKAnMyEgAaACIAKgAyADgAQgASWgoRLmRvY2tlcmNvbmZpZ2pzb24SRXsiYXV0aHMiOnsici5leGFtcGxlIjp7InVzZXJuYW1lIjoidSIsInBhc3N3b3JkIjoicCIsImF1dGgiOiJkVHB3In19fRoea3ViZXJuZXRlcy5pby9kb2NrZXJjb25maWdqc29uGgAiAA==",
    want: {"apiVersion":"v1","kind":"Secret","metadata":{"name":"s2"},"data":{".dockerconfigjson":"eyJhdXRocyI6eyJyLmV4YW1wbGUiOnsidXNlcm5hbWUiOiJ1IiwicGFzc3dvcmQiOiJwIiwiYXV0aCI6ImRUcHcifX19"},"type":"kubernetes.io/dockerconfigjson"},
  },
  {
    by: "kubectl create namespace ns1",
    body: "azhzAAoPCgJ2MRIJTmFtZXNwYWNlEhsKEwoDbnMxEgAaACIAKgAyADgAQgASABoCCgAaACIA",
    want: {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"},"spec":{},"status":{}},
  },
  {
    by: "kubectl create serviceaccount sa1",
    body: "azhzAAoUCgJ2MRIOU2VydmljZUFjY291bnQSFQoTCgNzYTESABoAIgAqADIAOABCABoAIgA=",
    want: {"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1"}},
  },
  {
    by: "kubectl create deployment d9 --image=nginx --port=8080 --replicas=0",
    body: "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50ErUBCh0KAmQ5EgAaACIAKgAyADgAQgBaCQoDYXBwEgJkORKFAQgAEgsKCQoDYXBwEgJkORpsChsKABIAGgAiACoAMgA4AEIAWgkKA2FwcBICZDkSTRIvCgVuZ2lueBIFbmdpbngqADILCgAQABiQPyIAKgBCAGoAcgCAAQCIAQCQAQCiAQAaADIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAIgIKACgAOAAaDAgAEAAYACAAKAA4ABoAIgA=",
    want: {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d9","labels":{"app":"d9"}},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"d9"}},"template":{"metadata":{"labels":{"app":"d9"}},"spec":{"containers":[{"name":"nginx","image":"nginx","ports":[{"containerPort":8080}],"resources":{}}]}},"strategy":{}},"status":{}},
  },
  {
    by: "kubectl create role r1 --verb=get,list --resource=pods,deployments.apps --resource-name=x",
    body: "azhzAAokChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgRSb2xlEk8KEgoCcjESABoAIgAqADIAOABCABIWCgNnZXQKBGxpc3QSABoEcG9kcyIBeBIhCgNnZXQKBGxpc3QSBGFwcHMaC2RlcGxveW1lbnRzIgF4GgAiAA==",
    want: {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r1"},"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"],"resourceNames":["x"]},{"verbs":["get","list"],"apiGroups":["apps"],"resources":["deployments"],"resourceNames":["x"]}]},
  },
  {
    by: "kubectl create clusterrole cr2 --aggregation-rule=rbac.example.com/aggregate-to-monitoring=true",
    body: "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtDbHVzdGVyUm9sZRJLChMKA2NyMhIAGgAiACoAMgA4AEIAGjQKMgowCihyYmFjLmV4YW1wbGUuY29tL2FnZ3JlZ2F0ZS10by1tb25pdG9yaW5nEgR0cnVlGgAiAA==",
    want: {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"cr2"},"rules":null,"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.example.com/aggregate-to-monitoring":"true"}}]}},
  },
  {
    by: "kubectl create rolebinding rb1 --role=r1 --user=alice --group=devs --serviceaccount=default:sa1",
    body: "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtSb2xlQmluZGluZxK2AQoTCgNyYjESABoAIgAqADIAOABCABIqCgRVc2VyEhlyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvGgVhbGljZSIAEioKBUdyb3VwEhlyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvGgRkZXZzIgASIAoOU2VydmljZUFjY291bnQSABoDc2ExIgdkZWZhdWx0GiUKGXJiYWMuYXV0aG9yaXphdGlvbi5rOHMuaW8SBFJvbGUaAnIxGgAiAA==",
    want: {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"rb1"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"},{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"devs"},{"kind":"ServiceAccount","name":"sa1","namespace":"default"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r1"}},
  },
  {
    by: "kubectl create service nodeport svc2 --tcp=80:8080 --node-port=30080",
    body: "azhzAAoNCgJ2MRIHU2VydmljZRJtCiEKBHN2YzISABoAIgAqADIAOABCAFoLCgNhcHASBHN2YzISRAodCgc4MC04MDgwEgNUQ1AYUCIHCAAQkD8aACiA6wESCwoDYXBwEgRzdmMyGgAiCE5vZGVQb3J0OgBCAFIAWgBgAGgAGgIKABoAIgA=",
    want: {"apiVersion":"v1","kind":"Service","metadata":{"name":"svc2","labels":{"app":"svc2"}},"spec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}],"selector":{"app":"svc2"},"type":"NodePort"},"status":{"loadBalancer":{}}},
  },
  {
    by: "kubectl create job j1 --image=busybox -- echo hi",
    body: "azhzAAoPCghiYXRjaC92MRIDSm9iEoQBChIKAmoxEgAaACIAKgAyADgAQgASZDJiChAKABIAGgAiACoAMgA4AEIAEk4SKwoCajESB2J1c3lib3gaBGVjaG8aAmhpKgBCAGoAcgCAAQCIAQCQAQCiAQAaBU5ldmVyMgBCAEoAUgBYAGAAaACCAQCKAQCaAQDCAQAaCCAAKAAwADoAGgAiAA==",
    want: {"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1"},"spec":{"template":{"metadata":{},"spec":{"containers":[{"name":"j1","image":"busybox","command":["echo","hi"],"resources":{}}],"restartPolicy":"Never"}}},"status":{}},
  },
  {
    by: "kubectl create cronjob cj1 --image=busybox --schedule=*/1 * * * * --restart=OnFailure -- echo hi",
    body: "azhzAAoTCghiYXRjaC92MRIHQ3JvbkpvYhKsAQoTCgNjajESABoAIgAqADIAOABCABKSAQoLKi8xICogKiAqICoaACqAAQoTCgNjajESABoAIgAqADIAOABCABJpMmcKEAoAEgAaACIAKgAyADgAQgASUxIsCgNjajESB2J1c3lib3gaBGVjaG8aAmhpKgBCAGoAcgCAAQCIAQCQAQCiAQAaCU9uRmFpbHVyZTIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAGgAaACIA",
    want: {"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj1"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{"metadata":{"name":"cj1"},"spec":{"template":{"metadata":{},"spec":{"containers":[{"name":"cj1","image":"busybox","command":["echo","hi"],"resources":{}}],"restartPolicy":"OnFailure"}}}}},"status":{}},
  },
  {
    by: "kubectl create quota q1 --hard=cpu=1,memory=1G,pods=2",
    body: "azhzAAoTCgJ2MRINUmVzb3VyY2VRdW90YRJBChIKAnExEgAaACIAKgAyADgAQgASKQoKCgNjcHUSAwoBMQoOCgZtZW1vcnkSBAoCMUcKCwoEcG9kcxIDCgEyGgAaACIA",
    want: {"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q1"},"spec":{"hard":{"cpu":"1","memory":"1G","pods":"2"}},"status":{}},
  },
  {
    by: "kubectl create poddisruptionbudget pdb2 --selector=app=x --max-unavailable=30%",
    body: "azhzAAogCglwb2xpY3kvdjESE1BvZERpc3J1cHRpb25CdWRnZXQSOwoUCgRwZGIyEgAaACIAKgAyADgAQgASFxIKCggKA2FwcBIBeBoJCAEQABoDMzAlGgoIABgAIAAoADAAGgAiAA==",
    want: {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"pdb2"},"spec":{"selector":{"matchLabels":{"app":"x"}},"maxUnavailable":"30%"},"status":{"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}},
  },
  {
    by: "kubectl create priorityclass pc1 --value=1000 --description=hi",
    body: "azhzAAolChRzY2hlZHVsaW5nLms4cy5pby92MRINUHJpb3JpdHlDbGFzcxI0ChMKA3BjMRIAGgAiACoAMgA4AEIAEOgHGAAiAmhpKhRQcmVlbXB0TG93ZXJQcmlvcml0eRoAIgA=",
    want: {"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"pc1"},"value":1000,"description":"hi","preemptionPolicy":"PreemptLowerPriority"},
  },
  {
    by: "kubectl create ingress ing2 --class=nginx --rule=/path*=svc:http --default-backend=defsvc:80 --rule=a.com/=svc2:8080,tls=sec --annotation=x=y",
    body: "azhzAAofChRuZXR3b3JraW5nLms4cy5pby92MRIHSW5ncmVzcxKhAQocCgRpbmcyEgAaACIAKgAyADgAQgBiBgoBeBIBeRJ9ChAiDgoGZGVmc3ZjEgQKABBQEgwKBWEuY29tEgNzZWMaKgoAEiYKJAoiCgUvcGF0aBIRIg8KA3N2YxIICgRodHRwEAAaBlByZWZpeBooCgVhLmNvbRIfCh0KGwoBLxIPIg0KBHN2YzISBQoAEJA/GgVFeGFjdCIFbmdpbngaAgoAGgAiAA==",
    want: {"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"ing2","annotations":{"x":"y"}},"spec":{"ingressClassName":"nginx","defaultBackend":{"service":{"name":"defsvc","port":{"number":80}}},"tls":[{"hosts":["a.com"],"secretName":"sec"}],"rules":[{"http":{"paths":[{"path":"/path","pathType":"Prefix","backend":{"service":{"name":"svc","port":{"name":"http"}}}}]}},{"host":"a.com","http":{"paths":[{"path":"/","pathType":"Exact","backend":{"service":{"name":"svc2","port":{"number":8080}}}}]}}]},"status":{"loadBalancer":{}}},
  },
  { // golden: no --dry-run form; checked field by field against the source object
    by: "kubectl create token sa1 --audience=a --audience=b --duration=10m --bound-object-kind=Pod --bound-object-name=rich",
    body: "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBI2ChAKABIAGgAiACoAMgA4AEIAEhwKAWEKAWIaEQoDUG9kEgJ2MRoEcmljaCIAINgEGgQKABIAGgAiAA==",
    want: {"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{},"spec":{"audiences":["a","b"],"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"rich"},"expirationSeconds":600},"status":{}},
  },
  { // golden: no --dry-run form; checked field by field against the source object
    by: "kubectl auth can-i create deployments.apps -n kube-system --subresource=scale",
    body: "azhzAAoyChdhdXRob3JpemF0aW9uLms4cy5pby92MRIXU2VsZlN1YmplY3RBY2Nlc3NSZXZpZXcSUwoQCgASABoAIgAqADIAOABCABI1CjMKC2t1YmUtc3lzdGVtEgZjcmVhdGUaBGFwcHMiACoLZGVwbG95bWVudHMyBXNjYWxlOgAaCAgAEgAaACAAGgAiAA==",
    want: {"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"namespace":"kube-system","verb":"create","group":"apps","resource":"deployments","subresource":"scale"}},"status":{}},
  },
  { // golden: no --dry-run form; checked field by field against the source object
    by: "kubectl auth can-i get /logs",
    body: "azhzAAoyChdhdXRob3JpemF0aW9uLms4cy5pby92MRIXU2VsZlN1YmplY3RBY2Nlc3NSZXZpZXcSLAoQCgASABoAIgAqADIAOABCABIOEgwKBS9sb2dzEgNnZXQaCAgAEgAaACAAGgAiAA==",
    want: {"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"nonResourceAttributes":{"path":"/logs","verb":"get"}},"status":{}},
  },
  { // golden: no --dry-run form; checked field by field against the source object
    by: "kubectl auth reconcile -f rbac2.yaml",
    body: "azhzAAokChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgRSb2xlEosBCk8KAnJyEgAaB2RlZmF1bHQiACokODVhODE5ZDMtYjc1Yi00MzQ0LTk1MzgtMjI1NWZjOTAyNDJlMgIzMjgAQggI79OM2AYQAFoGCgFhEgFiEiAKA2dldAoEbGlzdAoFd2F0Y2gSABoKY29uZmlnbWFwcxIWCgZjcmVhdGUSABoKY29uZmlnbWFwcxoAIgA=",
    want: {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"rr","namespace":"default","uid":"85a819d3-b75b-4344-9538-2255fc90242e","resourceVersion":"32","creationTimestamp":"2026-11-22T17:44:15Z","labels":{"a":"b"}},"rules":[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["configmaps"]},{"verbs":["create"],"apiGroups":[""],"resources":["configmaps"]}]},
  },
  { // golden: no --dry-run form; checked field by field against the source object
    by: "kubectl debug rich --copy-to=rich2 --image=busybox --container=dbg --profile=general -- sleep 1",
    body: "azhzAAoJCgJ2MRIDUG9kEt4KChwKBXJpY2gyEgAaB2RlZmF1bHQiACoAMgA4AEIAEqgKCiMKA2NmZxIcmgEZCgUKA2NtMRINCgFhEgVhLnR4dBiAAhikAwoPCgNzZWMSCDIGCgJzMSABChkKA3RtcBISEhAKBk1lbW9yeRIGCgQ2NE1pCh8KBGhvc3QSFwoVCggvdmFyL2xvZxIJRGlyZWN0b3J5ChEKA3B2YxIKUggKBGRhdGEQAQpBCgRwcm9qEjnSATYKESIPCgNhcGkQkBwaBXRva2VuCiESHwodCgZsYWJlbHMSEwoAEg9tZXRhZGF0YS5sYWJlbHMS6AMKA2FwcBIKbmdpbng6MS4yNyIGLS1wb3J0IgQ4MDgwKgQvYXBwMhIKBGh0dHAQABiQPyIDVENQKgAyDQoAEJKVARiCRyIAKgA6BgoBQRIBMToJCgVFTVBUWRIAOhwKA1BPRBIAGhMKEQoAEg1tZXRhZGF0YS5uYW1lOh8KA0NQVRIAGhYSFAoAEgpsaW1pdHMuY3B1GgQKAjFtOhoKBkZST01DTRIAGg4aDAoFCgNjbTESAWEYADoYCgdGUk9NU0VDEgAaCyIJCgQKAnMxEgFrQlYKCgoDY3B1EgMKATEKDwoGbWVtb3J5EgUKAzFHaQoVCg5udmlkaWEuY29tL2dwdRIDCgExEg0KA2NwdRIGCgQxMDBtEhEKBm1lbW9yeRIHCgUxMjhNaUoRCgNjZmcQARoEL2NmZyIAMgBKEgoDdG1wEAAaBC90bXAiAXgyAGIQCggKBgoEdHJ1ZRIEIgIIBWoUL2Rldi90ZXJtaW5hdGlvbi1sb2dyDElmTm90UHJlc2VudHohChcKEE5FVF9CSU5EX1NFUlZJQ0USA0FMTBAAIAAwATgAgAEBiAEAkAEBmgENCgJQXxIHCgUKA2NtMZoBDAoAGggKBAoCczEQAaIBFUZhbGxiYWNrVG9Mb2dzT25FcnJvchJBCgRncnBjEgdidXN5Ym94KgBCAGoUL2Rldi90ZXJtaW5hdGlvbi1sb2dyBkFsd2F5c4ABAIgBAJABAKIBBEZpbGUSQAoDZGJnEgdidXN5Ym94GgVzbGVlcBoBMSoAQgBqAHIAeg4KDAoKU1lTX1BUUkFDRYABAIgBAJABAKIBBEZpbGUaBkFsd2F5cyAAKNgEMgxDbHVzdGVyRmlyc3Q6CwoEZGlzaxIDc3NkQgBKAFIAWABgAGgAcjwQ6AcYASABIAIgAyjQDzoaChJuZXQuY29yZS5zb21heGNvbm4SBDEwMjRSEAoOUnVudGltZURlZmF1bHSCAQCKAQCSAUkKFgoUChIKEAoEem9uZRICSW4aAWEaAWIaLxItCDISKQoPEg0KA2FwcBIGRXhpc3RzGhZrdWJlcm5ldGVzLmlvL2hvc3RuYW1lmgERZGVmYXVsdC1zY2hlZHVsZXKiAU8KBGluaXQSB2J1c3lib3gaAnNoGgItYxoEdHJ1ZSoAQgBqFC9kZXYvdGVybWluYXRpb24tbG9ncgZBbHdheXOAAQCIAQCQAQCiAQRGaWxlqAEAsgEaCgFrEgVFcXVhbBoBdiIJTm9FeGVjdXRlKB6yAQ4KABIGRXhpc3RzGgAiALoBHAoIMTAuMC4wLjESB2EubG9jYWwSB2IubG9jYWzCAQDIAfv//////////wHSAR4KBzEuMS4xLjEaCgoFbmRvdHMSATIaBwoFZWRuczDYAQHwAQD6ARRQcmVlbXB0TG93ZXJQcmlvcml0eYoCJggBEgR6b25lGg1Eb05vdFNjaGVkdWxlIg0KCwoDYXBwEgRyaWNoGhMKABoAIgAqADIASgBaAHIAiAEAGgAiAA==",
    want: {"apiVersion":"v1","kind":"Pod","metadata":{"name":"rich2","namespace":"default"},"spec":{"volumes":[{"name":"cfg","configMap":{"name":"cm1","items":[{"key":"a","path":"a.txt","mode":256}],"defaultMode":420}},{"name":"sec","secret":{"secretName":"s1","optional":true}},{"name":"tmp","emptyDir":{"medium":"Memory","sizeLimit":"64Mi"}},{"name":"host","hostPath":{"path":"/var/log","type":"Directory"}},{"name":"pvc","persistentVolumeClaim":{"claimName":"data","readOnly":true}},{"name":"proj","projected":{"sources":[{"serviceAccountToken":{"audience":"api","expirationSeconds":3600,"path":"token"}},{"downwardAPI":{"items":[{"path":"labels","fieldRef":{"fieldPath":"metadata.labels"}}]}}]}}],"containers":[{"name":"app","image":"nginx:1.27","args":["--port","8080"],"workingDir":"/app","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"hostPort":19090,"containerPort":9090}],"env":[{"name":"A","value":"1"},{"name":"EMPTY"},{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},{"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1m"}}},{"name":"FROMCM","valueFrom":{"configMapKeyRef":{"name":"cm1","key":"a","optional":false}}},{"name":"FROMSEC","valueFrom":{"secretKeyRef":{"name":"s1","key":"k"}}}],"resources":{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"cfg","readOnly":true,"mountPath":"/cfg"},{"name":"tmp","mountPath":"/tmp","subPath":"x"}],"lifecycle":{"postStart":{"exec":{"command":["true"]}},"preStop":{"sleep":{"seconds":5}}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent","securityContext":{"capabilities":{"add":["NET_BIND_SERVICE"],"drop":["ALL"]},"privileged":false,"runAsUser":0,"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false},"stdin":true,"tty":true,"envFrom":[{"prefix":"P_","configMapRef":{"name":"cm1"}},{"secretRef":{"name":"s1","optional":true}}],"terminationMessagePolicy":"FallbackToLogsOnError"},{"name":"grpc","image":"busybox","resources":{},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"Always","terminationMessagePolicy":"File"},{"name":"dbg","image":"busybox","command":["sleep","1"],"resources":{},"securityContext":{"capabilities":{"add":["SYS_PTRACE"]}},"terminationMessagePolicy":"File"}],"restartPolicy":"Always","terminationGracePeriodSeconds":0,"activeDeadlineSeconds":600,"dnsPolicy":"ClusterFirst","nodeSelector":{"disk":"ssd"},"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"supplementalGroups":[1,2,3],"fsGroup":2000,"sysctls":[{"name":"net.core.somaxconn","value":"1024"}],"seccompProfile":{"type":"RuntimeDefault"}},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}]}},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"podAffinityTerm":{"labelSelector":{"matchExpressions":[{"key":"app","operator":"Exists"}]},"topologyKey":"kubernetes.io/hostname"}}]}},"schedulerName":"default-scheduler","initContainers":[{"name":"init","image":"busybox","command":["sh","-c","true"],"resources":{},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"Always","terminationMessagePolicy":"File"}],"automountServiceAccountToken":false,"tolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoExecute","tolerationSeconds":30},{"operator":"Exists"}],"hostAliases":[{"ip":"10.0.0.1","hostnames":["a.local","b.local"]}],"priority":-5,"dnsConfig":{"nameservers":["1.1.1.1"],"options":[{"name":"ndots","value":"2"},{"name":"edns0"}]},"shareProcessNamespace":true,"enableServiceLinks":false,"preemptionPolicy":"PreemptLowerPriority","topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"rich"}}}]},"status":{}},
  },
  {
    by: "Go protobuf serializer: DeleteOptions",
    body: "azhzAAoTCgJ2MRINRGVsZXRlT3B0aW9ucxIgCAASCQoDdS0xEgI0MhgAIgpGb3JlZ3JvdW5kKgNBbGwaACIA",
    want: {"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0,"preconditions":{"uid":"u-1","resourceVersion":"42"},"orphanDependents":false,"propagationPolicy":"Foreground","dryRun":["All"]},
  },
  {
    by: "Go protobuf serializer: Eviction",
    body: "azhzAAoVCglwb2xpY3kvdjESCEV2aWN0aW9uEh8KGQoCcDESABoHZGVmYXVsdCIAKgAyADgAQgASAggHGgAiAA==",
    want: {"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p1","namespace":"default"},"deleteOptions":{"gracePeriodSeconds":7}},
  },
  {
    by: "Go protobuf serializer: Scale",
    body: "azhzAAoXCg5hdXRvc2NhbGluZy92MRIFU2NhbGUSLAoaCgJkMRIAGgdkZWZhdWx0IgAqADIBOTgAQgASAggAGgoIAhIGYXBwPWQxGgAiAA==",
    want: {"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d1","namespace":"default","resourceVersion":"9"},"spec":{},"status":{"replicas":2,"selector":"app=d1"}},
  },
  {
    by: "Go protobuf serializer: Deployment",
    body: "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50EqgECocCCgN3ZWISABoEcHJvZCIAKiQwZjZiMmEyZS0xYzFkLTRlNTUtOWIzYS0yZjhhMWM5ZDdlMDEyAzEyMzgDQggIv5SavgYQAEoICL+Umr4GEABQHloKCgNhcHASA3dlYloJCgVlbXB0eRIAYggKA2EvYhIBY2oiCgRTaXRlGgFzIgN1LTIqDmV4YW1wbGUuY29tL3YxMAE4AHINZXhhbXBsZS5jb20vYXINZXhhbXBsZS5jb20vYooBTwoHa3ViZWN0bBIFQXBwbHkaB2FwcHMvdjEiCAi/lJq+BhAAMghGaWVsZHNWMToeChx7ImY6c3BlYyI6eyJmOnJlcGxpY2FzIjp7fX19QgASjQIIABIsCgoKA2FwcBIDd2ViEhEKBHRpZXISBU5vdEluGgJkYhILCgF4EgZFeGlzdHMapQEKHAoAEgAaACIAKgAyADgAQgBaCgoDYXBwEgN3ZWIShAESLwoBYRIKbmdpbng6MS4yNyoAMgoKABAAGAAiACoAQgBqAHIAgAEAiAEAkAEAogEAEiAKAWISB2J1c3lib3gqAEIAagByAIABAIgBAJABAKIBABoAMgBCAEoAUgBYAGAAaAByEyD///////////8BIAAggICAgBCCAQCKAQCaAQDCAQAiJAoNUm9sbGluZ1VwZGF0ZRITCgkIARAAGgMyNSUSBggAEAAaACgFMP///////////wE4ARoMCAAQABgAIAAoADgAGgAiAA==",
    want: {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","uid":"0f6b2a2e-1c1d-4e55-9b3a-2f8a1c9d7e01","resourceVersion":"123","generation":3,"creationTimestamp":"2025-03-04T05:06:07Z","deletionTimestamp":"2025-03-04T05:06:07Z","deletionGracePeriodSeconds":30,"labels":{"app":"web","empty":""},"annotations":{"a/b":"c"},"ownerReferences":[{"apiVersion":"example.com/v1","kind":"Site","name":"s","uid":"u-2","controller":true,"blockOwnerDeletion":false}],"finalizers":["example.com/a","example.com/b"],"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"apps/v1","time":"2025-03-04T05:06:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]},{"key":"x","operator":"Exists"}]},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"a","image":"nginx:1.27","ports":[{"containerPort":0}],"resources":{}},{"name":"b","image":"busybox","resources":{}}],"securityContext":{"supplementalGroups":[-1,0,4294967296]}}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":0}},"minReadySeconds":5,"revisionHistoryLimit":-1,"paused":true},"status":{}},
  },
  {
    by: "Go protobuf serializer: ClusterRole",
    body: "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtDbHVzdGVyUm9sZRIXChUKBWVtcHR5EgAaACIAKgAyADgAQgAaACIA",
    want: {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"empty"},"rules":null},
  },
];

/** A k8s\0 + runtime.Unknown envelope around raw, as client-go's protobuf serializer writes it. */
function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const field = (n: number, b: Buffer) => Buffer.concat([Buffer.from([(n << 3) | 2]), varint(b.length), b]);
  const typeMeta = Buffer.concat([field(1, Buffer.from(apiVersion)), field(2, Buffer.from(kind))]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), field(1, typeMeta), field(2, raw)]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** The object message inside a fixture's envelope (runtime.Unknown field 2). */
function rawOf(f: Fixture): Buffer {
  const b = Buffer.from(f.body, 'base64');
  let i = 4;
  const read = () => {
    let n = 0;
    for (let s = 0; ; s += 7) {
      const x = b[i++];
      n += (x & 0x7f) * 2 ** s;
      if (!(x & 0x80)) return n;
    }
  };
  for (;;) {
    const tag = read();
    const len = read();
    if (tag === 0x12) return b.subarray(i, i + len);
    i += len;
  }
}

const fixture = (prefix: string) => FIXTURES.find((f) => f.by.startsWith(prefix))!;

describe('decodeProtobufObject', () => {
  it.each(FIXTURES)('$by', ({ body, want }) => {
    expect(decodeProtobufObject(Buffer.from(body, 'base64'))).toStrictEqual(want);
  });

  it('decodes DeleteOptions under whichever group version the client encoded it', () => {
    const raw = rawOf(fixture('Go protobuf serializer: DeleteOptions'));
    const got = decodeProtobufObject(envelope('apps/v1', 'DeleteOptions', raw));
    expect(got).toMatchObject({ apiVersion: 'apps/v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, propagationPolicy: 'Foreground', dryRun: ['All'] });
  });

  it('returns undefined for a kind it has no table for, so the server answers 415', () => {
    expect(decodeProtobufObject(envelope('storage.k8s.io/v1', 'StorageClass', Buffer.alloc(0)))).toBeUndefined();
    // Same kind name, other version: field numbers are per version, so it is not guessed.
    const raw = rawOf(fixture('kubectl create configmap cm1'));
    expect(decodeProtobufObject(envelope('apps/v1', 'ConfigMap', raw))).toBeUndefined();
  });

  it('rejects a body without the k8s\\0 prefix and a truncated message', () => {
    expect(() => decodeProtobufObject(Buffer.from('{"kind":"ConfigMap"}'))).toThrow('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
    const raw = rawOf(fixture('kubectl create deployment d9'));
    expect(() => decodeProtobufObject(envelope('apps/v1', 'Deployment', raw.subarray(0, raw.length - 20)))).toThrow('unexpected EOF');
  });

  it('skips fields it has no entry for', () => {
    // ConfigMap {metadata{name: "x"}, 99: "future", data{a: 1}}
    const meta = Buffer.from([0x0a, 0x03, 0x0a, 0x01, 0x78]);
    const unknown = Buffer.concat([Buffer.from([0x9a, 0x06, 0x06]), Buffer.from('future')]);
    const data = Buffer.from([0x12, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x31]);
    const got = decodeProtobufObject(envelope('v1', 'ConfigMap', Buffer.concat([meta, unknown, data])));
    expect(got).toStrictEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } });
  });
});
