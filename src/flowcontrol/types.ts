// The flowcontrol.apiserver.k8s.io/v1 objects fleetgate reads from its configuration directory (k8s.io/api
// flowcontrol/v1 types.go), and the two mandatory objects kube-apiserver imagines when they are missing
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap): without an exempt level and a catch-all schema a request could
// go unclassified.

import { SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED } from '../api/user.js';

export const FLOWCONTROL_API_VERSION = 'flowcontrol.apiserver.k8s.io/v1';

/** Response headers naming, by UID only, what the request was classified as (flowcontrol/v1 constants). */
export const HEADER_FLOW_SCHEMA_UID = 'X-Kubernetes-PF-FlowSchema-UID';
export const HEADER_PRIORITY_LEVEL_UID = 'X-Kubernetes-PF-PriorityLevel-UID';

export const NAME_EXEMPT = 'exempt';
export const NAME_CATCH_ALL = 'catch-all';

export interface ObjectMeta {
  name: string;
  uid?: string;
  [key: string]: unknown;
}

export interface UserSubject {
  name: string;
}
export interface GroupSubject {
  name: string;
}
export interface ServiceAccountSubject {
  namespace: string;
  name: string;
}
export interface Subject {
  kind: 'User' | 'Group' | 'ServiceAccount';
  user?: UserSubject;
  group?: GroupSubject;
  serviceAccount?: ServiceAccountSubject;
}

export interface ResourcePolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  clusterScope?: boolean;
  namespaces?: string[];
}

export interface NonResourcePolicyRule {
  verbs: string[];
  nonResourceURLs: string[];
}

export interface PolicyRulesWithSubjects {
  subjects: Subject[];
  resourceRules?: ResourcePolicyRule[];
  nonResourceRules?: NonResourcePolicyRule[];
}

export type DistinguisherMethodType = 'ByUser' | 'ByNamespace';

export interface FlowSchemaSpec {
  priorityLevelConfiguration: { name: string };
  /** 1..10000, lower is checked first; defaults to 1000. */
  matchingPrecedence?: number;
  distinguisherMethod?: { type: DistinguisherMethodType };
  rules?: PolicyRulesWithSubjects[];
}

export interface FlowSchema {
  apiVersion?: string;
  kind?: 'FlowSchema';
  metadata: ObjectMeta;
  spec: FlowSchemaSpec;
}

export interface QueuingConfiguration {
  queues?: number;
  handSize?: number;
  queueLengthLimit?: number;
}

export interface LimitResponse {
  type: 'Queue' | 'Reject';
  queuing?: QueuingConfiguration;
}

export interface LimitedPriorityLevelConfiguration {
  nominalConcurrencyShares?: number;
  lendablePercent?: number;
  borrowingLimitPercent?: number;
  limitResponse: LimitResponse;
}

export interface ExemptPriorityLevelConfiguration {
  nominalConcurrencyShares?: number;
  lendablePercent?: number;
}

export interface PriorityLevelConfigurationSpec {
  type: 'Exempt' | 'Limited';
  limited?: LimitedPriorityLevelConfiguration;
  exempt?: ExemptPriorityLevelConfiguration;
}

export interface PriorityLevelConfiguration {
  apiVersion?: string;
  kind?: 'PriorityLevelConfiguration';
  metadata: ObjectMeta;
  spec: PriorityLevelConfigurationSpec;
}

const ALL_RESOURCES: ResourcePolicyRule = { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] };
const ALL_NON_RESOURCES: NonResourcePolicyRule = { verbs: ['*'], nonResourceURLs: ['*'] };

function groups(...names: string[]): Subject[] {
  return names.map((name) => ({ kind: 'Group', group: { name } }));
}

export const MANDATORY_PL_EXEMPT: PriorityLevelConfiguration = {
  apiVersion: FLOWCONTROL_API_VERSION,
  kind: 'PriorityLevelConfiguration',
  metadata: { name: NAME_EXEMPT },
  spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } },
};

export const MANDATORY_PL_CATCH_ALL: PriorityLevelConfiguration = {
  apiVersion: FLOWCONTROL_API_VERSION,
  kind: 'PriorityLevelConfiguration',
  metadata: { name: NAME_CATCH_ALL },
  spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: { type: 'Reject' } } },
};

export const MANDATORY_FS_EXEMPT: FlowSchema = {
  apiVersion: FLOWCONTROL_API_VERSION,
  kind: 'FlowSchema',
  metadata: { name: NAME_EXEMPT },
  spec: {
    priorityLevelConfiguration: { name: NAME_EXEMPT },
    matchingPrecedence: 1,
    rules: [{ subjects: groups(SYSTEM_MASTERS), resourceRules: [ALL_RESOURCES], nonResourceRules: [ALL_NON_RESOURCES] }],
  },
};

export const MANDATORY_FS_CATCH_ALL: FlowSchema = {
  apiVersion: FLOWCONTROL_API_VERSION,
  kind: 'FlowSchema',
  metadata: { name: NAME_CATCH_ALL },
  spec: {
    priorityLevelConfiguration: { name: NAME_CATCH_ALL },
    matchingPrecedence: 10000,
    distinguisherMethod: { type: 'ByUser' },
    rules: [
      {
        subjects: groups(SYSTEM_UNAUTHENTICATED, SYSTEM_AUTHENTICATED),
        resourceRules: [ALL_RESOURCES],
        nonResourceRules: [ALL_NON_RESOURCES],
      },
    ],
  },
};
