// A kubeconfig with one cluster, one user and one context, all named spec.name, as kubectl and client-go read it.

import { stringify } from 'yaml';

export interface KubeconfigSpec {
  name: string;
  server: string;
  caPem: string;
  user: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
  namespace?: string;
}

export function buildKubeconfig(spec: KubeconfigSpec): string {
  if ((spec.clientCertPem === undefined) !== (spec.clientKeyPem === undefined)) {
    throw new Error(`kubeconfig ${spec.name}: clientCertPem and clientKeyPem must be given together`);
  }
  const user: Record<string, string> = {};
  if (spec.clientCertPem !== undefined && spec.clientKeyPem !== undefined) {
    user['client-certificate-data'] = base64(spec.clientCertPem);
    user['client-key-data'] = base64(spec.clientKeyPem);
  }
  if (spec.token !== undefined) user['token'] = spec.token;
  const context: Record<string, string> = { cluster: spec.name, user: spec.user };
  if (spec.namespace) context['namespace'] = spec.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: spec.name, cluster: { server: spec.server, 'certificate-authority-data': base64(spec.caPem) } }],
    users: [{ name: spec.user, user }],
    contexts: [{ name: spec.name, context }],
    'current-context': spec.name,
    preferences: {},
  });
}

function base64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}
