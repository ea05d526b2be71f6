// What an admission check reports, and how a refusal reads: a 403 Status in kube-apiserver's admission form
// (`deployments.apps "web" is forbidden: <why>`) whose message names the rule and says what to do instead.

import { goQuote, newForbidden, type GroupResource, type StatusError } from '../api/status.js';

export type RuleName = 'deletion-protection' | 'scale-down-protection';

/** A rule that would refuse the request. */
export interface Finding {
  rule: RuleName;
  /** What the 403 names (the parent resource for a subresource, as admission plugins do). */
  resource: GroupResource;
  /** '' for collections. */
  name: string;
  /** Starts with the rule's name: "deletion protection: it is labelled ...". */
  reason: string;
  /** What to do instead, as an imperative: "remove the label first (...)". */
  remedy: string;
}

/** The result of one check: a finding when the rule objects, and a short summary for the audit annotation. */
export interface Outcome {
  finding?: Finding;
  summary: string;
}

/** The audit annotation key each rule's decision is recorded under. */
export function annotationKey(rule: RuleName): string {
  return `admission.fleetgate.io/${rule}`;
}

/** ", or ask a member of the break-glass group "sre"" — empty when no group is configured. */
export function breakGlassHint(groups: readonly string[]): string {
  if (groups.length === 0) return '';
  if (groups.length === 1) return `, or ask a member of the break-glass group ${goQuote(groups[0]!)}`;
  return `, or ask a member of a break-glass group (${groups.map(goQuote).join(', ')})`;
}

export function refusal(f: Finding, breakGlassGroups: readonly string[]): StatusError {
  return newForbidden(f.resource, f.name, `${f.reason}; ${f.remedy}${breakGlassHint(breakGlassGroups)}`);
}
