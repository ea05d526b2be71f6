// The audit metrics a kube-apiserver exports (k8s.io/apiserver/pkg/audit/metrics.go), same names, help and labels.

import { Counter, type Registry } from 'prom-client';

export interface AuditMetrics {
  /** Every event handed to the backends (one per stage written). */
  events: Counter<never>;
  /** Events lost or not stored, by plugin ("log", "webhook"). */
  errors: Counter<'plugin'>;
  /** The policy level of every request (1 per request). */
  levels: Counter<'level'>;
  /** Requests refused because their audit record could not be stored. */
  rejected: Counter<never>;
}

export function newAuditMetrics(registry: Registry): AuditMetrics {
  return {
    events: new Counter({
      name: 'apiserver_audit_event_total',
      help: 'Counter of audit events generated and sent to the audit backend.',
      registers: [registry],
    }),
    errors: new Counter({
      name: 'apiserver_audit_error_total',
      help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
      labelNames: ['plugin'],
      registers: [registry],
    }),
    levels: new Counter({
      name: 'apiserver_audit_level_total',
      help: 'Counter of policy levels for audit events (1 per request).',
      labelNames: ['level'],
      registers: [registry],
    }),
    rejected: new Counter({
      name: 'apiserver_audit_requests_rejected_total',
      help: 'Counter of apiserver requests rejected due to an error in audit logging backend.',
      registers: [registry],
    }),
  };
}
