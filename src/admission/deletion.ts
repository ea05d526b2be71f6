// Deletion protection: an object labelled with a protection label (fleetgate.io/deletion-protection=Always,
// Karmada's resourcetemplate.karmada.io/deletion-protected=Always) is not deleted, neither by name, nor as part of
// a collection (then nothing of the collection is), nor with the namespace that holds it. Each check reads what
// the delete would touch, as the caller, just before the delete goes out.

import { goQuote, groupResourceString, type GroupResource } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import type { Upstream } from '../upstream/client.js';
import type { Finding, Outcome } from './finding.js';
import { protectionLabelOf, type CompiledRules, type ProtectionLabel } from './rules.js';
import { getMetadata, left, namespacedCollectionPath, namespacedResources, replyMessage, scanList, upstreamError, type ListedMeta, type Reply } from './upstream.js';

const RULE = 'deletion-protection';
/** Protected objects named in a message; the rest are counted. */
const NAMED = 3;
/** Parallel LISTs while looking through a namespace. */
const NAMESPACE_SCAN_CONCURRENCY = 8;

export interface DeletionSettings {
  rules: CompiledRules['deletion'];
  /** How long discovered namespaced resources are reused, per upstream. */
  discoveryTtlMs: number;
}

/** DELETE of one object (or an eviction of a pod): is the object itself protected? */
export async function checkObjectDeletion(up: Upstream, path: string, gr: GroupResource, namespace: string, name: string, as: UserInfo, s: DeletionSettings, deadline: number): Promise<Outcome> {
  const r = await getMetadata(up, path, as, left(deadline));
  // Gone already: the delete answers its own 404. 405: the resource cannot be read at all, so nobody could label it knowingly.
  if (r.status === 404 || r.status === 405) return { summary: 'not found' };
  if (r.status === 401 || r.status === 403) return { summary: 'not checked', finding: unreadable(gr, name, `it could not be read as you (${replyMessage(r)})`, 'ask for permission to get it') };
  if (r.status !== 200) throw upstreamError(up, r);
  const label = protectionLabelOf(r.body?.metadata?.labels, s.rules.labels);
  if (!label) return { summary: 'not protected' };
  const nsArg = namespace ? ` -n ${namespace}` : '';
  return {
    summary: 'protected',
    finding: {
      rule: RULE,
      resource: gr,
      name,
      reason: `deletion protection: it is labelled ${labelText(label)}`,
      remedy: `remove the label first (kubectl label ${groupResourceString(gr)} ${name}${nsArg} ${label.key}-)`,
    },
  };
}

/**
 * DELETE of a collection, or the LIST with which `kubectl delete --all|-l` picks what it then deletes one by one:
 * what the same selectors select, read as the caller. One protected object among them stops all of it.
 */
export async function checkCollectionDeletion(
  up: Upstream,
  path: string,
  gr: GroupResource,
  namespace: string,
  /** The list the upstream will make: selectors, continue, resourceVersion, limit. */
  listOptions: URLSearchParams,
  as: UserInfo,
  s: DeletionSettings,
  deadline: number,
): Promise<Outcome> {
  const found = new Found(!namespace);
  const r = await scanList(up, path, listOptions, as, deadline, (m) => {
    const label = protectionLabelOf(m.labels, s.rules.labels);
    if (label) found.add(m, label);
    return true;
  });
  if (r) {
    if (r.status === 404 || r.status === 405) return { summary: 'not found' };
    if (r.status === 401 || r.status === 403) return { summary: 'not checked', finding: unreadable(gr, '', `the selection could not be listed as you (${replyMessage(r)})`, 'ask for permission to list it') };
    throw upstreamError(up, r);
  }
  if (found.count === 0) return { summary: 'no protected object selected' };
  const except = s.rules.labels.map((l) => `${l.key}!=${l.value}`).join(',');
  return {
    summary: `${found.count} protected`,
    finding: {
      rule: RULE,
      resource: gr,
      name: '',
      reason: `deletion protection: the selection holds ${found.describe(gr)}, so nothing is deleted`,
      remedy: `remove the label from them first, or leave them out (-l '${except}')`,
    },
  };
}

/** DELETE of a namespace: the namespace itself, then every protected object it holds. */
export async function checkNamespaceDeletion(up: Upstream, name: string, as: UserInfo, s: DeletionSettings, deadline: number): Promise<Outcome> {
  const nsGR = { group: '', resource: 'namespaces' };
  const self = await checkObjectDeletion(up, `/api/v1/namespaces/${encodeURIComponent(name)}`, nsGR, '', name, as, s, deadline);
  if (self.finding || self.summary === 'not found') return self;

  const resources = s.rules.namespaceContents === 'discovery' ? await namespacedResources(up, s.discoveryTtlMs, left(deadline)) : s.rules.namespaceContents;
  const found = new Found(false);
  const unreadable: string[] = [];
  let firstUnreadable: Reply | undefined;
  const tasks: Array<() => Promise<void>> = [];
  for (const gvr of resources) {
    const gr = { group: gvr.group, resource: gvr.resource };
    for (const label of s.rules.labels) {
      tasks.push(async () => {
        const q = new URLSearchParams({ labelSelector: `${label.key}=${label.value}`, limit: String(NAMED + 1) });
        let seen = 0;
        const r = await scanList(up, namespacedCollectionPath(gvr, name), q, as, deadline, (m) => {
          found.add(m, label, gr);
          seen++;
          return true;
        });
        if (seen > NAMED) found.atLeast = true;
        // 404/405: the resource went away since discovery, or cannot be listed; the namespace controller skips it too.
        if (!r || r.status === 404 || r.status === 405) return;
        const what = groupResourceString(gr);
        if (!unreadable.includes(what)) unreadable.push(what);
        firstUnreadable ??= r;
      });
    }
  }
  await runLimited(tasks, NAMESPACE_SCAN_CONCURRENCY);
  if (found.count > 0) {
    return {
      summary: `${found.atLeast ? 'at least ' : ''}${found.count} protected inside`,
      finding: {
        rule: RULE,
        resource: nsGR,
        name,
        reason: `deletion protection: the namespace holds ${found.describe(null)}`,
        remedy: 'remove the label from them first',
      },
    };
  }
  if (unreadable.length > 0) {
    return {
      summary: 'not checked',
      finding: unreadableNamespace(name, unreadable, firstUnreadable!),
    };
  }
  return { summary: `no protected object in ${resources.length} resources` };
}

function unreadableNamespace(name: string, resources: string[], r: Reply): Finding {
  const shown = resources.slice(0, NAMED).join(', ') + (resources.length > NAMED ? ` and ${resources.length - NAMED} more` : '');
  return unreadable(
    { group: '', resource: 'namespaces' },
    name,
    `what the namespace holds could not be listed as you (${shown}: ${replyMessage(r)})`,
    'ask for permission to list them',
  );
}

/** The check could not see what it must judge: refused, because deleting blind is what the rule prevents. */
function unreadable(gr: GroupResource, name: string, why: string, remedy: string): Finding {
  return { rule: RULE, resource: gr, name, reason: `deletion protection: cannot tell whether anything protected would be deleted: ${why}`, remedy };
}

export function labelText(l: ProtectionLabel): string {
  return `${l.key}=${l.value}`;
}

/** Protected objects met during a scan: the first few by name, the rest counted, each object once. */
class Found {
  count = 0;
  /** Some scan stopped at its limit: count is a lower bound. */
  atLeast = false;
  private named: string[] = [];
  private seen = new Set<string>();
  constructor(private readonly acrossNamespaces: boolean) {}

  add(m: ListedMeta, label: ProtectionLabel, gr?: GroupResource): void {
    const key = `${gr ? groupResourceString(gr) : ''}/${m.namespace ?? ''}/${m.name ?? ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.count++;
    if (this.named.length >= NAMED) return;
    let s = gr ? `${groupResourceString(gr)} ${goQuote(m.name ?? '')}` : goQuote(m.name ?? '');
    if (this.acrossNamespaces && m.namespace) s += ` in namespace ${goQuote(m.namespace)}`;
    this.named.push(`${s} (${labelText(label)})`);
  }

  /** `protected deployments.apps: "web" (label)`, `3 protected objects: a, b, c and 1 more`. */
  describe(gr: GroupResource | null): string {
    const more = this.count - this.named.length;
    const list = this.named.join(', ') + (more > 0 ? ` and ${more} more` : '');
    const what = gr ? groupResourceString(gr) : 'objects';
    const howMany = this.count === 1 && !this.atLeast ? '' : `${this.atLeast ? 'at least ' : ''}${this.count} `;
    return `${howMany}protected ${what}: ${list}`;
  }
}

async function runLimited(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

