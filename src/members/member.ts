// What the gateway knows about one member cluster: how to reach it with its own identity (for lists and watches)
// and as the caller (for writes, logs and exec: the member's RBAC decides), where the description came from, and
// how healthy its cache is.

import type { EndpointSpec } from '../upstream/client.js';

/** A member as configured (static) or as found in a Karmada Cluster object (dynamic). */
export interface MemberSpec {
  name: string;
  source: 'static' | 'karmada';
  /** The gateway's identity on the member: lists and watches of pods and events. */
  endpoint: EndpointSpec;
  /**
   * The identity writes and streams use, impersonating the caller (Karmada's impersonatorSecretRef token); the
   * gateway's own identity when absent.
   */
  impersonator?: EndpointSpec;
  /** Changes when anything that matters for connecting changes, so a changed Cluster object reconnects. */
  fingerprint: string;
}

/** How a member's cache is doing, for /readyz?verbose, Warning headers on lists and metrics. */
export interface MemberCacheStatus {
  name: string;
  /** Every resource of the member has listed once and is watching. */
  synced: boolean;
  /** When synced last changed (epoch ms). */
  since: number;
  /** Objects cached from this member, per resource. */
  objects: Record<string, number>;
  /** The member is currently unreachable or its watch is broken: lists carry its last known objects. */
  stale: boolean;
  lastError?: string;
}
