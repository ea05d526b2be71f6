// audit.k8s.io/v1 as k8s.io/apiserver/pkg/apis/audit/v1 defines it: the levels, the stages, the Event written for
// every stage of an audited request and the Policy that decides the level. Field order in Event is the Go
// struct's, so our JSON lines read like a kube-apiserver's.

export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

export const LEVELS: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
export const STAGES: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

const LEVEL_ORDER: Record<Level, number> = { None: 0, Metadata: 1, Request: 2, RequestResponse: 3 };

/** Level.GreaterOrEqual. */
export function levelAtLeast(l: Level, min: Level): boolean {
  return LEVEL_ORDER[l] >= LEVEL_ORDER[min];
}

/** authentication/v1 UserInfo as it appears in an Event (every field omitempty). */
export interface EventUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** The metav1.Status fields an Event keeps (LogResponseObject copies only these). */
export interface EventStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

export interface Event {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: EventUser;
  impersonatedUser?: EventUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: EventStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  /** MicroTime: RFC 3339 in UTC with six fractional digits. */
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

export interface GroupResources {
  group?: string;
  resources?: string[];
  resourceNames?: string[];
}

export interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  apiVersion: string;
  kind: 'Policy';
  rules: PolicyRule[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

/** What the policy decides for one request (RequestAuditConfigWithLevel). */
export interface RequestAuditConfig {
  level: Level;
  omitStages: ReadonlySet<Stage>;
  omitManagedFields: boolean;
}
