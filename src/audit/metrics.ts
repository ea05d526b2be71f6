// The audit metrics a kube-apiserver exports (k8s.io/apiserver/pkg/audit/metrics.go), same names, help and labels.

import type { Registry } from 'prom-client';
import { CounterVec } from '../metrics/vec.js';

export interface AuditMetrics {
  /** Every event handed to the backends (one per stage written). */
  events: CounterVec<never>;
  /** Events lost or not stored, by plugin ("log", "webhook"). */
  errors: CounterVec<'plugin'>;
  /** The policy level of every request (1 per request). */
  levels: CounterVec<'level'>;
  /** Requests refused because their audit record could not be stored. */
  rejected: CounterVec<never>;
}

export function newAuditMetrics(registry: Registry): AuditMetrics {
  return {
    events: new CounterVec({
      name: 'apiserver_audit_event_total',
      help: 'Counter of audit events generated and sent to the audit backend.',
      registers: [registry],
    }),
    errors: new CounterVec({
      name: 'apiserver_audit_error_total',
      help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
      labelNames: ['plugin'],
      registers: [registry],
    }),
    levels: new CounterVec({
      name: 'apiserver_audit_level_total',
      help: 'Counter of policy levels for audit events (1 per request).',
      labelNames: ['level'],
      registers: [registry],
    }),
    rejected: new CounterVec({
      name: 'apiserver_audit_requests_rejected_total',
      help: 'Counter of apiserver requests rejected due to an error in audit logging backend.',
      registers: [registry],
    }),
  };
}
