// The live connections to member clusters, kept in step with the member registry: a member that appears gets
// its upstreams, one whose connection details change (a new fingerprint) gets new ones and the old ones are
// closed (their streams and tunnels end: they were opened with credentials that are no longer the member's),
// and a member that goes away is closed. Routing borrows them per request and never holds on to them.

import type { Logger } from 'pino';
import { upstreamFromEndpoint, type Upstream } from '../upstream/client.js';
import type { MemberSpec } from './member.js';
import type { MemberRegistry } from './registry.js';

export interface MemberConnection {
  spec: MemberSpec;
  /** The gateway's own identity on the member (lists and watches). */
  upstream: Upstream;
  /** The identity that impersonates callers (writes, logs, exec); the same upstream when the member has no separate one. */
  impersonator: Upstream;
}

export interface MemberConnections {
  get(name: string): MemberConnection | undefined;
  /** Known members, sorted. */
  names(): string[];
  /** Why a known member has no connection (its endpoint cannot be used, the registry cannot describe it), else undefined. */
  problem(name: string): string | undefined;
  close(): Promise<void>;
}

/**
 * What connections need of a member registry; problems() (members it knows but cannot use) and synced (read once)
 * when it has them.
 */
export type MemberSource = Pick<MemberRegistry, 'list' | 'subscribe'> & Partial<Pick<MemberRegistry, 'problems' | 'synced'>>;

interface Entry {
  spec: MemberSpec;
  conn?: MemberConnection;
  problem?: string;
}

const ROLE = 'member cluster';

export function memberConnections(source: MemberSource, opts: { log: Logger }): MemberConnections {
  const entries = new Map<string, Entry>();
  let closed = false;

  const release = (e: Entry | undefined) => {
    const c = e?.conn;
    if (!c) return;
    const done = [c.upstream.close()];
    if (c.impersonator !== c.upstream) done.push(c.impersonator.close());
    Promise.all(done).catch((err) => opts.log.warn({ member: e!.spec.name, err: (err as Error).message }, 'closing member connections failed'));
  };

  const connect = (spec: MemberSpec): Entry => {
    let upstream: Upstream | undefined;
    try {
      upstream = upstreamFromEndpoint({ ...spec.endpoint, name: spec.name, role: ROLE });
      const impersonator = spec.impersonator ? upstreamFromEndpoint({ ...spec.impersonator, name: spec.name, role: ROLE }) : upstream;
      return { spec, conn: { spec, upstream, impersonator } };
    } catch (err) {
      void upstream?.close();
      const problem = (err as Error).message;
      opts.log.error({ member: spec.name, err: problem }, 'member cluster cannot be connected to');
      return { spec, problem };
    }
  };

  const upsert = (spec: MemberSpec) => {
    const prev = entries.get(spec.name);
    if (prev && prev.spec.fingerprint === spec.fingerprint) {
      prev.spec = spec;
      if (prev.conn) prev.conn.spec = spec;
      return;
    }
    entries.set(spec.name, connect(spec));
    release(prev);
  };

  // Subscribe first, then read the list: a member added in between is seen twice, which upsert absorbs.
  const unsubscribe = source.subscribe((ev) => {
    if (closed) return;
    if (ev.type === 'removed') {
      const prev = entries.get(ev.spec.name);
      entries.delete(ev.spec.name);
      release(prev);
    } else {
      upsert(ev.spec);
    }
  });
  for (const spec of source.list()) upsert(spec);

  return {
    get: (name) => entries.get(name)?.conn,
    names: () => [...entries.keys()].sort(),
    problem: (name) => entries.get(name)?.problem ?? source.problems?.().find((p) => p.name === name)?.error,
    async close() {
      closed = true;
      unsubscribe();
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(
        all.flatMap((e) => (e.conn ? (e.conn.impersonator !== e.conn.upstream ? [e.conn.upstream.close(), e.conn.impersonator.close()] : [e.conn.upstream.close()]) : [])),
      );
    },
  };
}
