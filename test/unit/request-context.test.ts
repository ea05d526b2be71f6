import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { newRequestContext } from '../../src/server/server.js';
import { paced, type StreamingBody } from '../../src/server/respond.js';
import { EventEmitter } from 'node:events';

/** Own properties defined by a getter or setter. Each object that has one gets a hidden class of its own. */
function ownAccessors(o: object): string[] {
  return Object.entries(Object.getOwnPropertyDescriptors(o))
    .filter(([, d]) => d.get !== undefined || d.set !== undefined)
    .map(([k]) => k);
}

// V8 allocates hidden classes in the old generation. A per-request object with its own accessors got one of its
// own, and that dead hidden class kept the whole request alive through young-generation collections (promoted
// ~6 KB per request under load). These keep the accessors on shared prototypes.
describe('per-request objects share their hidden class', () => {
  const req = { url: '/api/v1/namespaces/a/pods/b?watch=false', headers: {} } as unknown as IncomingMessage;
  const res = new EventEmitter() as unknown as ServerResponse;

  it('a request context has no accessors of its own, and its log is made lazily with the audit ID, then the user', () => {
    const base = pino({ level: 'silent' });
    const a = newRequestContext(base, req, res, 'audit-1');
    const b = newRequestContext(base, req, res, 'audit-2');
    expect(ownAccessors(a)).toEqual([]);
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    expect(a.url.pathname).toBe('/api/v1/namespaces/a/pods/b');
    expect(a.log.bindings()).toEqual({ auditID: 'audit-1' });
    expect(a.log).toBe(a.log);
    a.user = { username: 'alice', uid: '', groups: [], extra: {} };
    expect(a.log.bindings()).toEqual({ auditID: 'audit-1', user: 'alice' });
    const custom = base.child({ custom: true });
    b.log = custom;
    b.user = { username: 'bob', uid: '', groups: [], extra: {} };
    expect(b.log).toBe(custom);
  });

  it('a paced body has no accessors of its own', () => {
    const body = () => Object.assign(new EventEmitter(), { writeHead() {}, write: () => true, end() {} }) as unknown as StreamingBody;
    const a = paced(body());
    const b = paced(body());
    expect(ownAccessors(a)).toEqual([]);
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    expect(a.destroyed).toBe(false);
  });
});
