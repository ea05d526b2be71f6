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
  /**
   * The request's field and label selectors as a SubjectAccessReview carries them (AuthorizeWithSelectors, on by
   * default since Kubernetes 1.32): a webhook authorizer may allow a read narrowed by them that it would refuse
   * whole. Absent when the request has none, or none a review can express.
   */
  fieldSelector?: SelectorRequirement[];
  labelSelector?: SelectorRequirement[];
}

/** authorization.k8s.io's FieldSelectorRequirement and LabelSelectorRequirement (the same fields). */
export interface SelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface Decision {
  allowed: boolean;
  /** Why, in RBAC's words; shown in audit annotations and 403 messages. */
  reason: string;
  /** Not allowed, and said so (status.denied); not allowed without it is "no opinion", as RBAC answers. */
  denied?: boolean;
}

export const SYSTEM_AUTHENTICATED = 'system:authenticated';
export const SYSTEM_UNAUTHENTICATED = 'system:unauthenticated';
export const SYSTEM_ANONYMOUS = 'system:anonymous';
export const SYSTEM_MASTERS = 'system:masters';
/** serviceaccount.ServiceAccountUsernamePrefix: a user name the apiserver reads as a service account's. */
export const SERVICE_ACCOUNT_USER_PREFIX = 'system:serviceaccount:';

/**
 * Whether u and everything in it is frozen: authenticators hand out one such UserInfo per connection or token
 * (src/authn/group.ts), so what is worked out from it (decision cache keys, Impersonate-* headers) can be kept
 * with it instead of being made again for every request.
 */
export function isDeepFrozen(u: UserInfo): boolean {
  if (!Object.isFrozen(u) || !Object.isFrozen(u.groups)) return false;
  if (!u.extra) return true;
  if (!Object.isFrozen(u.extra)) return false;
  for (const k in u.extra) if (!Object.isFrozen(u.extra[k])) return false;
  return true;
}
