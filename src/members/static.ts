// Members from the configuration: a kubeconfig (and optionally a context) each, read the way the control plane's
// kubeconfig is read (src/upstream/client.ts), so the same credential rules apply. The gateway's own identity
// there does the caching and, with Impersonate-* headers, the callers' writes.

import { isDNS1123Label } from '../api/meta.js';
import { endpointFromKubeconfig } from '../upstream/client.js';
import type { MemberSpec } from './member.js';
import { memberFingerprint } from './registry.js';

export interface StaticMember {
  name: string;
  kubeconfig: string;
  /** Empty or absent: the kubeconfig's current context. */
  context?: string;
}

/** Throws, naming the member, when a name is invalid or repeated or a kubeconfig cannot be used. */
export function staticMembers(list: StaticMember[]): MemberSpec[] {
  const seen = new Set<string>();
  return list.map((m) => {
    // The name becomes a label value (fleetgate.io/cluster) and a path segment (/clusters/<name>).
    const errs = isDNS1123Label(m.name);
    if (errs.length > 0) throw new Error(`member ${JSON.stringify(m.name)}: invalid name: ${errs.join(', ')}`);
    if (seen.has(m.name)) throw new Error(`member ${JSON.stringify(m.name)} is configured twice`);
    seen.add(m.name);
    let endpoint;
    try {
      endpoint = endpointFromKubeconfig(m.kubeconfig, m.context || undefined, m.name);
    } catch (e) {
      throw new Error(`member ${JSON.stringify(m.name)}: ${(e as Error).message}`);
    }
    endpoint.role = 'member cluster';
    return { name: m.name, source: 'static' as const, endpoint, fingerprint: memberFingerprint(endpoint) };
  });
}
