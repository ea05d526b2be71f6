// group.AuthenticatedGroupAdder: every authenticated user is in system:authenticated, unless the authenticator
// already said authenticated or unauthenticated, and the anonymous user never is.

import { SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED, type UserInfo } from '../api/user.js';

/**
 * The user as the rest of the chain sees it. The result is frozen because authenticators cache users across
 * requests (per connection, per token): nobody downstream may edit a shared identity in place.
 */
export function withAuthenticatedGroup(u: UserInfo): Readonly<UserInfo> {
  if (u.username === SYSTEM_ANONYMOUS || u.groups.includes(SYSTEM_AUTHENTICATED) || u.groups.includes(SYSTEM_UNAUTHENTICATED)) {
    return freezeUser(u);
  }
  return freezeUser({ ...u, groups: [...u.groups, SYSTEM_AUTHENTICATED] });
}

export function freezeUser(u: UserInfo): Readonly<UserInfo> {
  Object.freeze(u.groups);
  if (u.extra) {
    for (const v of Object.values(u.extra)) Object.freeze(v);
    Object.freeze(u.extra);
  }
  return Object.freeze(u);
}
