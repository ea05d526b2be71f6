// UserInfo and authorization Attributes, as k8s.io/apiserver names them. Shared by the gateway's chain and the
// in-memory fleet so both speak of callers and requests the same way.

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What an authorizer is asked about one request (k8s.io/apiserver/pkg/authorization/authorizer.Attributes). */
export interface Attributes {
  user: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  /** Non-resource requests: the URL path. */
  path: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
}

export interface Decision {
  allowed: boolean;
  /** Why, in RBAC's words; shown in audit annotations and 403 messages. */
  reason: string;
}

export const SYSTEM_AUTHENTICATED = 'system:authenticated';
export const SYSTEM_UNAUTHENTICATED = 'system:unauthenticated';
export const SYSTEM_ANONYMOUS = 'system:anonymous';
export const SYSTEM_MASTERS = 'system:masters';
