// Scale-down protection: one change may not take away more than a set share of a workload's replicas (half by
// default), nor take it to 0. The change is judged on its exact result: the same request is sent upstream with
// dryRun=All, as the caller, and the replicas it would leave are compared with the replicas now. No patch is
// interpreted here, so strategic merge, JSON patch, merge patch, server-side apply and PUT are judged alike.

import type { GroupResource } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import type { Upstream } from '../upstream/client.js';
import type { Outcome } from './finding.js';
import { judgeScaleDown, objectReplicas, scaleReplicas, type ScaleLimit } from './rules.js';
import { call, getObject, left, replyMessage, upstreamError } from './upstream.js';

const RULE = 'scale-down-protection';

export interface WriteRequest {
  method: string;
  /** The object's path, or its /scale subresource's. */
  path: string;
  /** The request's query, as sent ('' or "?..."). */
  search: string;
  contentType: string | undefined;
  body: Buffer;
  /** Whether path is the /scale subresource (an autoscaling/v1 Scale both ways). */
  scaleSubresource: boolean;
}

export async function checkScaleDown(up: Upstream, w: WriteRequest, gr: GroupResource, name: string, limit: ScaleLimit, as: UserInfo, deadline: number): Promise<Outcome> {
  const replicasOf = (o: unknown) => (w.scaleSubresource ? scaleReplicas(o) : objectReplicas(o, limit.replicasPath));
  const cur = await getObject(up, w.path, as, left(deadline));
  // Not there yet (an apply that creates): nothing to take away. The write answers for itself.
  if (cur.status === 404) return { summary: 'new object' };
  if (cur.status === 401 || cur.status === 403) {
    return {
      summary: 'not checked',
      finding: {
        rule: RULE,
        resource: gr,
        name,
        reason: `scale-down protection: cannot compare replicas, because the current object could not be read as you (${replyMessage(cur)})`,
        remedy: 'ask for permission to get it',
      },
    };
  }
  if (cur.status !== 200) throw upstreamError(up, cur);
  const before = replicasOf(cur.body);
  if (before === undefined || before === 0) return { summary: `from ${before ?? 'unknown'} replicas` };

  const q = new URLSearchParams(w.search);
  if (!q.getAll('dryRun').includes('All')) q.append('dryRun', 'All');
  const probe = await call(up, { method: w.method, path: `${w.path}?${q}`, accept: 'application/json', as, body: w.body, contentType: w.contentType, timeoutMs: left(deadline) });
  // The dry run fails exactly as the write would (conflict, invalid, forbidden): that answer is the write's answer.
  if (probe.status < 200 || probe.status > 299) throw upstreamError(up, probe);
  const after = replicasOf(probe.body);
  if (after === undefined) return { summary: `from ${before} to unknown replicas` };
  const summary = `from ${before} to ${after} replicas`;
  const v = judgeScaleDown(before, after, limit);
  if (!v) return { summary };
  const steps = `scale down in steps of at most ${limit.maxReductionPercent}% (to no fewer than ${v.floor} replicas now)`;
  return {
    summary,
    finding: {
      rule: RULE,
      resource: gr,
      name,
      reason:
        v.kind === 'zero'
          ? `scale-down protection: this change would take it from ${before} to 0 replicas, and no single change may take it to 0`
          : `scale-down protection: this change would take it from ${before} to ${after} replicas, removing more than ${limit.maxReductionPercent}% of them at once`,
      remedy: v.kind === 'zero' ? (v.floor > 1 ? `keep at least 1 replica and ${steps}` : 'keep at least 1 replica') : steps,
    },
  };
}
