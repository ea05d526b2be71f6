// Where the gateway learns which member clusters exist: the configuration (static) and Karmada Cluster objects on
// the control plane (dynamic, changing at run time). Consumers follow one registry: they start a cache for each
// 'added' member, reconnect on 'changed' (the fingerprint moved) and drop the member's objects on 'removed'.

import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { EndpointSpec } from '../upstream/client.js';
import type { MemberSpec } from './member.js';

export type MemberEventType = 'added' | 'changed' | 'removed';

export interface MemberEvent {
  type: MemberEventType;
  /** For 'removed', the spec the member had. */
  spec: MemberSpec;
}

export type MemberListener = (ev: MemberEvent) => void;

/** A member the registry knows of but cannot use (a Cluster whose secret is missing, say), for logs and /readyz. */
export interface MemberProblem {
  name: string;
  source: MemberSpec['source'];
  error: string;
  /** When this problem was first seen (epoch ms). */
  since: number;
}

export interface MemberRegistry {
  list(): MemberSpec[];
  get(name: string): MemberSpec | undefined;
  /** Events for changes from now on; list() gives the current members. Returns the unsubscribe function. */
  subscribe(l: MemberListener): () => void;
  /** The source has been read once: every member it had then is in list() or in problems(). */
  readonly synced: boolean;
  problems(): MemberProblem[];
  close(): Promise<void>;
}

/**
 * Changes whenever anything a connection depends on changes (address, CA, credentials, TLS options), without
 * revealing any of it.
 */
export function memberFingerprint(endpoint: EndpointSpec, impersonator?: EndpointSpec): string {
  const h = createHash('sha256');
  const add = (ep: EndpointSpec | undefined) => {
    h.update(JSON.stringify(ep ? [ep.url, ep.caPem ?? '', ep.certPem ?? '', ep.keyPem ?? '', ep.token ?? '', ep.insecure === true, ep.serverName ?? ''] : null));
    h.update('\n');
  };
  add(endpoint);
  add(impersonator);
  return h.digest('hex').slice(0, 32);
}

/** Listener bookkeeping shared by the registries: one failing listener never keeps an event from the others. */
export function memberEvents(log: Logger) {
  const listeners = new Set<MemberListener>();
  return {
    subscribe(l: MemberListener): () => void {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    emit(type: MemberEventType, spec: MemberSpec): void {
      for (const l of listeners) {
        try {
          l({ type, spec });
        } catch (e) {
          log.error({ member: spec.name, event: type, err: (e as Error).message }, 'member listener failed');
        }
      }
    },
  };
}

/** A fixed set of members (the configuration's). */
export function staticRegistry(specs: MemberSpec[]): MemberRegistry {
  const byName = new Map(specs.map((s) => [s.name, s]));
  if (byName.size !== specs.length) throw new Error('static members: each name may appear only once');
  return {
    list: () => [...byName.values()],
    get: (name) => byName.get(name),
    subscribe: () => () => {},
    synced: true,
    problems: () => [],
    close: async () => {},
  };
}

/**
 * One registry over several, the first one that has a name winning (pass the static registry first: a member
 * defined in the configuration and by a Karmada Cluster is the configuration's, with a warning). When the winner
 * drops a name another registry still has, the member switches over as 'changed'.
 */
export function combineRegistries(registries: MemberRegistry[], log: Logger): MemberRegistry {
  const events = memberEvents(log);
  const current = new Map<string, MemberSpec>();
  const warned = new Set<string>();

  const winner = (name: string): MemberSpec | undefined => {
    let found: MemberSpec | undefined;
    for (const r of registries) {
      const s = r.get(name);
      if (!s) continue;
      if (!found) {
        found = s;
        continue;
      }
      const key = `${name}\u0000${s.source}`;
      if (!warned.has(key)) {
        warned.add(key);
        log.warn({ member: name, used: found.source, ignored: s.source }, `member ${name} is defined by ${found.source} and by ${s.source}; the ${found.source} one is used`);
      }
    }
    return found;
  };

  const settle = (name: string): void => {
    const prev = current.get(name);
    const next = winner(name);
    if (next) current.set(name, next);
    else current.delete(name);
    if (!prev && next) events.emit('added', next);
    else if (prev && !next) {
      warned.forEach((k) => k.startsWith(`${name}\u0000`) && warned.delete(k));
      events.emit('removed', prev);
    } else if (prev && next && (prev.fingerprint !== next.fingerprint || prev.source !== next.source)) events.emit('changed', next);
  };

  for (const r of registries) for (const s of r.list()) if (!current.has(s.name)) settle(s.name);
  const unsubscribe = registries.map((r) => r.subscribe((ev) => settle(ev.spec.name)));

  return {
    list: () => [...current.values()],
    get: (name) => current.get(name),
    subscribe: events.subscribe,
    get synced() {
      return registries.every((r) => r.synced);
    },
    problems: () => registries.flatMap((r) => r.problems()),
    async close() {
      for (const u of unsubscribe) u();
      await Promise.all(registries.map((r) => r.close()));
    },
  };
}
