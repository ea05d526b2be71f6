// Static members from kubeconfigs, fingerprints, and combining registries (static first: it wins a name, with a
// warning; a member switches over as 'changed' when the winner drops it).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemberSpec } from '../../src/members/member.js';
import { combineRegistries, memberEvents, memberFingerprint, staticRegistry, type MemberEvent, type MemberRegistry } from '../../src/members/registry.js';
import { staticMembers } from '../../src/members/static.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

describe('staticMembers', () => {
  let dir: string;
  let a: string;
  let b: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-members-'));
    a = join(dir, 'a.kubeconfig');
    b = join(dir, 'b.kubeconfig');
    await writeFile(a, buildKubeconfig({ name: 'ctx-a', server: 'https://10.0.0.1:6443', caPem: CA, user: 'gw', token: 'token-a' }));
    await writeFile(b, buildKubeconfig({ name: 'ctx-b', server: 'https://10.0.0.2:6443', caPem: CA, user: 'gw', token: 'token-b' }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads each kubeconfig into a member named by the configuration', () => {
    const [ma, mb] = staticMembers([
      { name: 'member-a', kubeconfig: a },
      { name: 'member-b', kubeconfig: b, context: '' },
    ]);
    expect(ma).toMatchObject({ name: 'member-a', source: 'static', endpoint: { name: 'member-a', url: 'https://10.0.0.1:6443', token: 'token-a', caPem: CA, role: 'member cluster' } });
    expect(ma.impersonator).toBeUndefined();
    expect(mb.endpoint.url).toBe('https://10.0.0.2:6443');
    expect(ma.fingerprint).not.toBe(mb.fingerprint);
    // The same file gives the same fingerprint.
    expect(staticMembers([{ name: 'member-a', kubeconfig: a }])[0].fingerprint).toBe(ma.fingerprint);
  });

  it('refuses bad names, repeated names, unknown contexts and unreadable files, naming the member', () => {
    expect(() => staticMembers([{ name: 'Member_A', kubeconfig: a }])).toThrow(/^member "Member_A": invalid name: a lowercase RFC 1123 label must consist of/);
    expect(() => staticMembers([{ name: 'm', kubeconfig: a }, { name: 'm', kubeconfig: b }])).toThrow('member "m" is configured twice');
    expect(() => staticMembers([{ name: 'm', kubeconfig: a, context: 'nope' }])).toThrow(`member "m": kubeconfig ${a}: no context "nope"`);
    expect(() => staticMembers([{ name: 'm', kubeconfig: join(dir, 'missing') }])).toThrow(/^member "m": kubeconfig .*missing/);
  });
});

describe('memberFingerprint', () => {
  const ep = { name: 'm', url: 'https://h:6443', caPem: CA, token: 'secret-token-value' };
  it('changes with anything that matters for connecting and reveals none of it', () => {
    const f = memberFingerprint(ep);
    expect(f).toMatch(/^[0-9a-f]{32}$/);
    expect(memberFingerprint({ ...ep })).toBe(f);
    expect(memberFingerprint({ ...ep, name: 'other' })).toBe(f);
    for (const change of [{ url: 'https://h2:6443' }, { caPem: CA + ' ' }, { token: 'x' }, { insecure: true }, { serverName: 's' }, { certPem: 'c', keyPem: 'k' }]) {
      expect(memberFingerprint({ ...ep, ...change })).not.toBe(f);
    }
    expect(memberFingerprint(ep, { ...ep, token: 'imp' })).not.toBe(f);
    expect(f).not.toContain('secret');
  });
});

/** A registry the test drives by hand. */
function manual(source: MemberSpec['source']) {
  const specs = new Map<string, MemberSpec>();
  const ev = memberEvents(pino({ level: 'silent' }));
  const reg: MemberRegistry = {
    list: () => [...specs.values()],
    get: (n) => specs.get(n),
    subscribe: ev.subscribe,
    synced: true,
    problems: () => [],
    close: async () => {},
  };
  const spec = (name: string, url: string): MemberSpec => {
    const endpoint = { name, url };
    return { name, source, endpoint, fingerprint: memberFingerprint(endpoint) };
  };
  return {
    reg,
    set(name: string, url: string) {
      const had = specs.has(name);
      const s = spec(name, url);
      specs.set(name, s);
      ev.emit(had ? 'changed' : 'added', s);
    },
    drop(name: string) {
      const s = specs.get(name)!;
      specs.delete(name);
      ev.emit('removed', s);
    },
  };
}

describe('combineRegistries', () => {
  it('prefers the first registry, warns once per conflict, and switches a member over when the winner drops it', () => {
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => warnings.push(JSON.parse(l).msg) });
    const st = manual('static');
    const ka = manual('karmada');
    st.set('member-a', 'https://static-a');
    const all = combineRegistries([st.reg, ka.reg], log);
    const seen: string[] = [];
    all.subscribe((e: MemberEvent) => seen.push(`${e.type} ${e.spec.name} ${e.spec.source} ${e.spec.endpoint.url}`));
    expect(all.list().map((s) => s.name)).toEqual(['member-a']);

    ka.set('member-a', 'https://karmada-a');
    ka.set('member-b', 'https://karmada-b');
    ka.set('member-a', 'https://karmada-a2');
    expect(all.get('member-a')!.source).toBe('static');
    expect(warnings).toEqual(['member member-a is defined by static and by karmada; the static one is used']);

    st.drop('member-a');
    ka.set('member-b', 'https://karmada-b2');
    ka.drop('member-a');
    ka.set('member-b', 'https://karmada-b2');
    expect(seen).toEqual([
      'added member-b karmada https://karmada-b',
      'changed member-a karmada https://karmada-a2',
      'changed member-b karmada https://karmada-b2',
      'removed member-a karmada https://karmada-a2',
    ]);
    expect(all.list().map((s) => s.name)).toEqual(['member-b']);
    expect(all.synced).toBe(true);
  });

  it('keeps listeners apart: one that throws does not stop the others', () => {
    const ka = manual('karmada');
    const all = combineRegistries([staticRegistry([]), ka.reg], pino({ level: 'silent' }));
    const got: string[] = [];
    all.subscribe(() => {
      throw new Error('boom');
    });
    all.subscribe((e) => got.push(e.spec.name));
    ka.set('x', 'https://x');
    expect(got).toEqual(['x']);
  });

  it('refuses a static list with a name twice', () => {
    const s = staticRegistry([]);
    expect(s.list()).toEqual([]);
    const spec: MemberSpec = { name: 'a', source: 'static', endpoint: { name: 'a', url: 'https://a' }, fingerprint: 'f' };
    expect(() => staticRegistry([spec, spec])).toThrow('static members: each name may appear only once');
  });
});
