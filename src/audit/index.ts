// Audit (issue 5): the audit.k8s.io/v1 Policy, Events for every stage of a request, a JSON-lines log file and a
// webhook, and the chain steps. Mutations are audited durably before they are applied.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export { newAuditor, DEFAULT_MAX_RESPONSE_OBJECT_BYTES, type Auditor, type AuditOptions } from './auditor.js';
export { compilePolicy, loadPolicyFile, parsePolicy, PolicyError, type CompiledPolicy, type PolicyAttributes } from './policy.js';
export {
  addAuditAnnotation,
  annotateAuthorization,
  auditAuthenticationFailuresStep,
  auditEventOf,
  auditStep,
  ANNOTATION_DECISION,
  ANNOTATION_REASON,
  ANNOTATION_RESPONSE_OMITTED,
} from './step.js';
export { LOG_FILE_DEFAULTS, type LogFileOptions } from './logfile.js';
export { WEBHOOK_DEFAULTS, type WebhookOptions } from './webhook.js';
export type { Event, Level, Policy, PolicyRule, Stage } from './types.js';

/**
 * config/audit-policy.yaml of this installation: two levels up from src/audit when run from source, three from
 * dist/src/audit when built.
 */
export function defaultPolicyPath(): string {
  for (const rel of ['../../config/audit-policy.yaml', '../../../config/audit-policy.yaml']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('config/audit-policy.yaml is missing from this installation');
}
