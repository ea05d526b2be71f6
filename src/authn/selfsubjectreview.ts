// SelfSubjectReview (`kubectl auth whoami`), answered by the gateway itself: the control plane only ever sees the
// gateway's own identity plus Impersonate-* headers, and the caller's extra (e.g. its certificate's credential
// id) is the gateway's to report. Same object as pkg/registry/authentication/selfsubjectreview: creation time
// now, the user as the request context holds it (after impersonation), empty fields left out.

import type { UserInfo } from '../api/user.js';

export type SelfSubjectReviewVersion = 'authentication.k8s.io/v1' | 'authentication.k8s.io/v1beta1' | 'authentication.k8s.io/v1alpha1';

/** The POST's response body (status 201 Created, as for any create), in Go's field order. */
export function selfSubjectReviewResponse(user: UserInfo, apiVersion: SelfSubjectReviewVersion): object {
  const userInfo: Record<string, unknown> = {};
  if (user.username !== '') userInfo.username = user.username;
  if (user.uid) userInfo.uid = user.uid;
  if (user.groups.length > 0) userInfo.groups = [...user.groups];
  if (user.extra) {
    // encoding/json writes map keys sorted.
    const keys = Object.keys(user.extra).sort();
    if (keys.length > 0) {
      const extra: Record<string, string[]> = {};
      for (const k of keys) extra[k] = [...user.extra[k]!];
      userInfo.extra = extra;
    }
  }
  return {
    kind: 'SelfSubjectReview',
    apiVersion,
    metadata: { creationTimestamp: rfc3339Seconds(new Date()) },
    status: { userInfo },
  };
}

/** metav1.Time's JSON form: RFC 3339 in UTC, whole seconds. */
function rfc3339Seconds(d: Date): string {
  return d.toISOString().slice(0, 19) + 'Z';
}
