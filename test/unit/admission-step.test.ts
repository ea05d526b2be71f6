// admissionStep against a scripted upstream (a plain HTTP server): which requests it checks, what it asks the
// upstream and as whom, and how it decides, refuses and records.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { admissionStep } from '../../src/admission/step.js';
import { defaultAdmissionRules, type AdmissionRules } from '../../src/admission/rules.js';
import { StatusError } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { upstreamFromEndpoint, type Upstream } from '../../src/upstream/client.js';

interface Seen {
  method: string;
  url: string;
  accept: string;
  contentType?: string;
  user?: string;
  groups: string[];
  body: string;
}

type Handler = (req: Seen) => { status: number; body: unknown } | undefined;

let server: Server;
let up: Upstream;
let seen: Seen[] = [];
let handler: Handler = () => undefined;

beforeAll(async () => {
  server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const g = req.headers['impersonate-group'];
    const s: Seen = {
      method: req.method!,
      url: req.url!,
      accept: String(req.headers.accept ?? ''),
      contentType: req.headers['content-type'],
      user: req.headers['impersonate-user'] as string | undefined,
      groups: g === undefined ? [] : Array.isArray(g) ? g : [g],
      body: Buffer.concat(chunks).toString('utf8'),
    };
    seen.push(s);
    const out = handler(s) ?? { status: 404, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' } };
    res.writeHead(out.status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(out.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up = upstreamFromEndpoint({ name: 'cp', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});

afterAll(async () => {
  await up.close();
  await new Promise((r) => server.close(r));
});

afterEach(() => {
  seen = [];
  handler = () => undefined;
});

const alice: UserInfo = { username: 'alice', groups: ['devs', 'system:authenticated'] };
const sre: UserInfo = { username: 'bob', groups: ['sre', 'system:authenticated'] };

function ctxFor(method: string, path: string, user: UserInfo, o: { body?: string; contentType?: string; headers?: Record<string, string> } = {}): RequestContext {
  const url = new URL(path, 'https://gateway.invalid');
  const headers: Record<string, string> = { ...o.headers };
  if (o.contentType) headers['content-type'] = o.contentType;
  return {
    req: { method, headers, url: path } as any,
    res: {} as any,
    url,
    auditID: 'a1',
    info: newRequestInfo(method, url.pathname, url.searchParams),
    user,
    deadline: Date.now() + 5000,
    body: o.body === undefined ? undefined : Buffer.from(o.body),
    log: pino({ level: 'silent' }),
  };
}

interface Run {
  passed: boolean;
  error?: StatusError;
  audit: Record<string, string>;
}

async function run(ctx: RequestContext, rules: AdmissionRules = defaultAdmissionRules(), target: Upstream | null = up): Promise<Run> {
  const audit: Record<string, string> = {};
  const step = admissionStep({ upstreamFor: () => target ?? undefined, rules, breakGlassGroups: ['sre'], audit: (_c, k, v) => (audit[k] = v) });
  let passed = false;
  try {
    await step(ctx, async () => {
      passed = true;
    });
  } catch (e) {
    if (!(e instanceof StatusError)) throw e;
    return { passed, error: e, audit };
  }
  return { passed, audit };
}

const deploy = (name: string, replicas: number, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'prod', labels },
  spec: { replicas },
});
const PROTECTED = { 'fleetgate.io/deletion-protection': 'Always' };

describe('requests that need no check', () => {
  it('reads, creates and status writes pass without asking the upstream', async () => {
    for (const [m, p] of [
      ['GET', '/apis/apps/v1/namespaces/prod/deployments/web'],
      ['GET', '/apis/apps/v1/namespaces/prod/deployments'],
      ['GET', '/apis/apps/v1/namespaces/prod/deployments?watch=1'],
      ['POST', '/apis/apps/v1/namespaces/prod/deployments'],
      ['PUT', '/apis/apps/v1/namespaces/prod/deployments/web/status'],
      ['PATCH', '/api/v1/namespaces/prod/configmaps/x'],
      ['DELETE', '/api/v1/namespaces/prod/pods/p/ephemeralcontainers'],
      ['GET', '/version'],
    ] as const) {
      const r = await run(ctxFor(m, p, alice, { body: '{}', contentType: 'application/json' }));
      expect(r.passed, `${m} ${p}`).toBe(true);
    }
    expect(seen).toEqual([]);
  });

  it('passes when routing will not forward the request (upstreamFor gives nothing)', async () => {
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/web', alice), defaultAdmissionRules(), null);
    expect(r.passed).toBe(true);
    expect(seen).toEqual([]);
  });
});

describe('deletion protection', () => {
  it('refuses deleting a labelled object, after reading its metadata as the caller', async () => {
    handler = (s) => (s.method === 'GET' ? { status: 200, body: deploy('web', 3, PROTECTED) } : undefined);
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/web', alice));
    expect(r.passed).toBe(false);
    expect(r.error!.status).toMatchObject({ code: 403, reason: 'Forbidden', details: { name: 'web', group: 'apps', kind: 'deployments' } });
    expect(r.error!.status.message).toBe(
      'deployments.apps "web" is forbidden: deletion protection: it is labelled fleetgate.io/deletion-protection=Always; remove the label first ' +
        '(kubectl label deployments.apps web -n prod fleetgate.io/deletion-protection-), or ask a member of the break-glass group "sre"',
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/apis/apps/v1/namespaces/prod/deployments/web', user: 'alice', groups: ['devs'] });
    expect(seen[0]!.accept).toContain('as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
    expect(r.audit['admission.fleetgate.io/deletion-protection']).toBe('denied: deletion protection: it is labelled fleetgate.io/deletion-protection=Always');
  });

  it("honours Karmada's label and lets unlabelled objects go", async () => {
    handler = (s) => (s.url.endsWith('/karmada') ? { status: 200, body: deploy('karmada', 1, { 'resourcetemplate.karmada.io/deletion-protected': 'Always' }) } : { status: 200, body: deploy('plain', 1, { 'fleetgate.io/deletion-protection': 'Never' }) });
    const k = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/karmada', alice));
    expect(k.error!.status.message).toContain('it is labelled resourcetemplate.karmada.io/deletion-protected=Always');
    const p = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/plain', alice));
    expect(p.passed).toBe(true);
    expect(p.audit['admission.fleetgate.io/deletion-protection']).toBe('allowed: not protected');
  });

  it('a break-glass member deletes a protected object; the bypass is audited', async () => {
    handler = () => ({ status: 200, body: deploy('web', 3, PROTECTED) });
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/web', sre));
    expect(r.passed).toBe(true);
    expect(r.audit['admission.fleetgate.io/deletion-protection']).toBe('bypassed by break-glass group "sre": deletion protection: it is labelled fleetgate.io/deletion-protection=Always');
  });

  it('refuses when the caller may not read what they delete, and lets a missing object through to its 404', async () => {
    handler = () => ({ status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'deployments.apps "web" is forbidden: User "alice" cannot get resource' } });
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/web', alice));
    expect(r.error!.status.code).toBe(403);
    expect(r.error!.status.message).toContain('deletion protection: cannot tell whether anything protected would be deleted: it could not be read as you (');
    handler = () => undefined;
    expect((await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments/gone', alice))).passed).toBe(true);
  });

  it('an eviction is a deletion of the pod', async () => {
    handler = (s) => (s.url === '/api/v1/namespaces/prod/pods/p1' ? { status: 200, body: { kind: 'Pod', metadata: { name: 'p1', labels: PROTECTED } } } : undefined);
    const r = await run(ctxFor('POST', '/api/v1/namespaces/prod/pods/p1/eviction', alice, { body: '{}', contentType: 'application/json' }));
    expect(r.error!.status.message).toMatch(/^pods "p1" is forbidden: deletion protection: it is labelled/);
  });

  it('deletecollection lists with the same selectors as the caller and deletes nothing if one is protected', async () => {
    handler = (s) =>
      s.method === 'GET'
        ? { status: 200, body: { kind: 'PartialObjectMetadataList', metadata: {}, items: [{ metadata: { name: 'a' } }, { metadata: { name: 'b', labels: PROTECTED } }] } }
        : undefined;
    const r = await run(ctxFor('DELETE', '/api/v1/namespaces/prod/configmaps?labelSelector=app%3Dweb&fieldSelector=metadata.name!%3Dx&gracePeriodSeconds=0', alice));
    expect(r.error!.status.message).toBe(
      'configmaps is forbidden: deletion protection: the selection holds protected configmaps: "b" (fleetgate.io/deletion-protection=Always), so nothing is deleted; ' +
        "remove the label from them first, or leave them out (-l 'fleetgate.io/deletion-protection!=Always,resourcetemplate.karmada.io/deletion-protected!=Always'), " +
        'or ask a member of the break-glass group "sre"',
    );
    const q = new URL(seen[0]!.url, 'http://x').searchParams;
    expect(q.get('labelSelector')).toBe('app=web');
    expect(q.get('fieldSelector')).toBe('metadata.name!=x');
    expect(q.get('gracePeriodSeconds')).toBeNull();
    expect(seen[0]!.user).toBe('alice');
  });

  it('deletecollection lists what the upstream will delete: its continue token, resourceVersion and limit too', async () => {
    // The registry's DeleteCollection lists with the request's options: a token from an older list selects what
    // matched then, so the look must be at that list, not at what the selector matches now.
    handler = (s) =>
      s.method === 'GET' ? { status: 200, body: { metadata: {}, items: [{ metadata: { name: 'web', namespace: 'prod', labels: PROTECTED } }] } } : undefined;
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/namespaces/prod/deployments?labelSelector=x%3D1&continue=old-token&resourceVersion=10&resourceVersionMatch=NotOlderThan&limit=1', alice));
    expect(r.error!.status.message).toContain('"web" (fleetgate.io/deletion-protection=Always)');
    expect(seen).toHaveLength(1);
    const q = new URL(seen[0]!.url, 'http://x').searchParams;
    expect(Object.fromEntries(q)).toEqual({ labelSelector: 'x=1', continue: 'old-token', resourceVersion: '10', resourceVersionMatch: 'NotOlderThan', limit: '1' });
  });

  it('a target routing reads otherwise (members) is read with the list options it gives', async () => {
    handler = (s) => (s.method === 'GET' ? { status: 200, body: { metadata: {}, items: [{ metadata: { name: 'p', namespace: 'prod', labels: PROTECTED } }] } } : undefined);
    const audit: Record<string, string> = {};
    const listOptions = new URLSearchParams({ labelSelector: 'app=web' });
    const step = admissionStep({ upstreamFor: () => [{ upstream: up, listOptions }], rules: defaultAdmissionRules(), breakGlassGroups: [], audit: (_c, k, v) => (audit[k] = v) });
    const ctx = ctxFor('DELETE', '/api/v1/namespaces/prod/pods?labelSelector=fleetgate.io%2Fcluster%3Dm1,app%3Dweb', alice);
    await expect(step(ctx, async () => {})).rejects.toThrow('deletion protection');
    expect(new URL(seen[0]!.url, 'http://x').searchParams.get('labelSelector')).toBe('app=web');
  });

  it('deletecollection pages through the whole selection', async () => {
    handler = (s) => {
      const q = new URL(s.url, 'http://x').searchParams;
      if (!q.get('continue')) return { status: 200, body: { metadata: { continue: 'next' }, items: [{ metadata: { name: 'a' } }] } };
      return { status: 200, body: { metadata: {}, items: [{ metadata: { name: 'z', namespace: 'prod', labels: PROTECTED } }] } };
    };
    const r = await run(ctxFor('DELETE', '/apis/apps/v1/deployments', alice));
    expect(seen).toHaveLength(2);
    expect(r.error!.status.message).toContain('"z" in namespace "prod" (fleetgate.io/deletion-protection=Always)');
  });

  it("refuses the list of a `kubectl delete --all` sweep that would meet a protected object, but no one else's list", async () => {
    handler = () => ({ status: 200, body: { metadata: {}, items: [{ metadata: { name: 'a', labels: PROTECTED } }, { metadata: { name: 'b', labels: PROTECTED } }] } });
    // A later page of kubectl's list: the look is at the whole selection from its start, since kubectl deletes a
    // page's objects before it asks for the next.
    const r = await run(ctxFor('GET', '/apis/apps/v1/namespaces/prod/deployments?limit=500&continue=page-2', alice, { headers: { 'kubectl-command': 'kubectl delete' } }));
    expect(r.error!.status.message).toMatch(/^deployments.apps is forbidden: deletion protection: the selection holds 2 protected deployments.apps: "a" \(.*\), "b" \(.*\), so nothing is deleted/);
    expect(new URL(seen[0]!.url, 'http://x').searchParams.get('continue')).toBeNull();
    seen = [];
    const g = await run(ctxFor('GET', '/apis/apps/v1/namespaces/prod/deployments?limit=500', alice, { headers: { 'kubectl-command': 'kubectl get' } }));
    expect(g.passed).toBe(true);
    expect(seen).toEqual([]);
  });
});

describe('namespace deletion', () => {
  const discovery = (s: Seen) => {
    if (s.url === '/api') {
      return {
        status: 200,
        body: {
          kind: 'APIGroupDiscoveryList',
          items: [
            {
              metadata: { name: '' },
              versions: [
                {
                  version: 'v1',
                  resources: [
                    { resource: 'configmaps', scope: 'Namespaced', verbs: ['create', 'delete', 'deletecollection', 'get', 'list'] },
                    { resource: 'events', scope: 'Namespaced', verbs: ['create', 'delete', 'deletecollection', 'get', 'list'] },
                    { resource: 'namespaces', scope: 'Cluster', verbs: ['create', 'delete', 'get', 'list'] },
                    { resource: 'bindings', scope: 'Namespaced', verbs: ['create'] },
                  ],
                },
              ],
            },
          ],
        },
      };
    }
    if (s.url === '/apis') {
      return {
        status: 200,
        body: {
          kind: 'APIGroupDiscoveryList',
          items: [
            { metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['delete', 'list'] }] }] },
            { metadata: { name: 'metrics.k8s.io' }, versions: [{ version: 'v1beta1', resources: [{ resource: 'pods', scope: 'Namespaced', verbs: ['get', 'list'] }] }] },
          ],
        },
      };
    }
    return undefined;
  };

  it('looks through every namespaced deletable resource for each protection label, as the caller', async () => {
    handler = (s) => {
      if (s.url === '/api/v1/namespaces/prod') return { status: 200, body: { kind: 'Namespace', metadata: { name: 'prod' } } };
      const d = discovery(s);
      if (d) return d;
      const u = new URL(s.url, 'http://x');
      if (u.pathname === '/apis/apps/v1/namespaces/prod/deployments' && u.searchParams.get('labelSelector') === 'fleetgate.io/deletion-protection=Always') {
        return { status: 200, body: { metadata: {}, items: [{ metadata: { name: 'web', namespace: 'prod', labels: PROTECTED } }] } };
      }
      return { status: 200, body: { metadata: {}, items: [] } };
    };
    const r = await run(ctxFor('DELETE', '/api/v1/namespaces/prod', alice));
    expect(r.error!.status.message).toBe(
      'namespaces "prod" is forbidden: deletion protection: the namespace holds protected objects: deployments.apps "web" (fleetgate.io/deletion-protection=Always); ' +
        'remove the label from them first, or ask a member of the break-glass group "sre"',
    );
    const lists = seen.filter((s) => s.url.includes('labelSelector')).map((s) => decodeURIComponent(new URL(s.url, 'http://x').pathname + '?' + new URL(s.url, 'http://x').searchParams.get('labelSelector')));
    expect(lists.sort()).toEqual([
      '/api/v1/namespaces/prod/configmaps?fleetgate.io/deletion-protection=Always',
      '/api/v1/namespaces/prod/configmaps?resourcetemplate.karmada.io/deletion-protected=Always',
      '/apis/apps/v1/namespaces/prod/deployments?fleetgate.io/deletion-protection=Always',
      '/apis/apps/v1/namespaces/prod/deployments?resourcetemplate.karmada.io/deletion-protected=Always',
    ]);
    for (const s of seen) {
      if (s.url === '/api' || s.url === '/apis') expect(s.user).toBeUndefined();
      else expect(s.user).toBe('alice');
    }
  });

  it('an empty-handed look lets the namespace go; a list the caller may not make refuses it', async () => {
    handler = (s) => {
      if (s.url === '/api/v1/namespaces/dev') return { status: 200, body: { kind: 'Namespace', metadata: { name: 'dev' } } };
      return discovery(s) ?? { status: 200, body: { metadata: {}, items: [] } };
    };
    const ok = await run(ctxFor('DELETE', '/api/v1/namespaces/dev', alice));
    expect(ok.passed).toBe(true);
    expect(ok.audit['admission.fleetgate.io/deletion-protection']).toBe('allowed: no protected object in 2 resources');

    handler = (s) => {
      if (s.url === '/api/v1/namespaces/dev') return { status: 200, body: { kind: 'Namespace', metadata: { name: 'dev' } } };
      if (s.url.startsWith('/api/v1/namespaces/dev/configmaps')) return { status: 403, body: { kind: 'Status', code: 403, message: 'no configmaps for you' } };
      return discovery(s) ?? { status: 200, body: { metadata: {}, items: [] } };
    };
    const no = await run(ctxFor('DELETE', '/api/v1/namespaces/dev', alice));
    expect(no.error!.status.message).toContain('what the namespace holds could not be listed as you (configmaps: no configmaps for you)');
  });

  it('a labelled namespace is protected itself', async () => {
    handler = (s) => (s.url === '/api/v1/namespaces/prod' ? { status: 200, body: { kind: 'Namespace', metadata: { name: 'prod', labels: PROTECTED } } } : undefined);
    const r = await run(ctxFor('DELETE', '/api/v1/namespaces/prod', alice));
    expect(r.error!.status.message).toMatch(/^namespaces "prod" is forbidden: deletion protection: it is labelled fleetgate.io\/deletion-protection=Always; remove the label first \(kubectl label namespaces prod fleetgate.io\/deletion-protection-\)/);
    expect(seen).toHaveLength(1);
  });
});

describe('scale-down protection', () => {
  const current = (replicas: number) => (s: Seen) => {
    const u = new URL(s.url, 'http://x');
    if (s.method === 'GET') return { status: 200, body: u.pathname.endsWith('/scale') ? { kind: 'Scale', spec: { replicas } } : deploy('web', replicas) };
    return undefined;
  };

  it('sends the same write with dryRun=All as the caller and judges the replicas it would leave', async () => {
    const patch = '{"spec":{"replicas":1}}';
    handler = (s) => current(10)(s) ?? { status: 200, body: { kind: 'Scale', spec: { replicas: 1 } } };
    const r = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web/scale?fieldManager=kubectl-scale', alice, { body: patch, contentType: 'application/merge-patch+json' }));
    expect(r.error!.status.message).toBe(
      'deployments.apps "web" is forbidden: scale-down protection: this change would take it from 10 to 1 replicas, removing more than 50% of them at once; ' +
        'scale down in steps of at most 50% (to no fewer than 5 replicas now), or ask a member of the break-glass group "sre"',
    );
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /apis/apps/v1/namespaces/prod/deployments/web/scale',
      'PATCH /apis/apps/v1/namespaces/prod/deployments/web/scale?fieldManager=kubectl-scale&dryRun=All',
    ]);
    expect(seen[1]).toMatchObject({ body: patch, contentType: 'application/merge-patch+json', user: 'alice', groups: ['devs'] });
    expect(r.audit['admission.fleetgate.io/scale-down-protection']).toMatch(/^denied: scale-down protection: this change would take it from 10 to 1/);
  });

  it('to 0 is refused with its own words; a half-step is allowed', async () => {
    handler = (s) => current(10)(s) ?? { status: 200, body: deploy('web', 0) };
    const zero = await run(ctxFor('PUT', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: JSON.stringify(deploy('web', 0)), contentType: 'application/json' }));
    expect(zero.error!.status.message).toContain('from 10 to 0 replicas, and no single change may take it to 0; keep at least 1 replica and scale down in steps of at most 50% (to no fewer than 5 replicas now)');
    handler = (s) => current(10)(s) ?? { status: 200, body: deploy('web', 5) };
    const half = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: '[]', contentType: 'application/json-patch+json' }));
    expect(half.passed).toBe(true);
    expect(half.audit['admission.fleetgate.io/scale-down-protection']).toBe('allowed: from 10 to 5 replicas');
  });

  it("the dry run's own error is the answer (the write would fail alike)", async () => {
    handler = (s) => current(10)(s) ?? { status: 409, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 409, reason: 'Conflict', message: 'the object has been modified' } };
    const r = await run(ctxFor('PUT', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: '{}', contentType: 'application/json' }));
    expect(r.error!.status).toMatchObject({ code: 409, reason: 'Conflict', message: 'the object has been modified' });
  });

  it('a body that does not parse is a 400 before anything goes upstream', async () => {
    const r = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: '{', contentType: 'application/merge-patch+json' }));
    expect(r.error!.status.code).toBe(400);
    expect(seen).toEqual([]);
  });

  it('a new object (apply that creates) and a workload at 0 are not judged further', async () => {
    handler = () => undefined;
    expect((await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/new', alice, { body: 'a: b', contentType: 'application/apply-patch+yaml' }))).passed).toBe(true);
    expect(seen).toHaveLength(1);
    seen = [];
    handler = current(0);
    expect((await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: '{}', contentType: 'application/merge-patch+json' }))).passed).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('guards CRDs at their own replicas path; other resources are not guarded', async () => {
    const rules = defaultAdmissionRules();
    rules.scaleDown.resources.push({ group: 'example.com', resource: 'widgets', replicasPath: '.spec.size' });
    handler = (s) => (s.method === 'GET' ? { status: 200, body: { spec: { size: 8 } } } : { status: 200, body: { spec: { size: 2 } } });
    const r = await run(ctxFor('PATCH', '/apis/example.com/v1/namespaces/prod/widgets/w', alice, { body: '{}', contentType: 'application/merge-patch+json' }), rules);
    expect(r.error!.status.message).toMatch(/^widgets.example.com "w" is forbidden: scale-down protection: this change would take it from 8 to 2 replicas/);
    seen = [];
    expect((await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/replicasets/rs', alice, { body: '{}', contentType: 'application/merge-patch+json' }))).passed).toBe(true);
    expect(seen).toEqual([]);
  });

  it('break-glass: the shrink goes through and is audited; a failing check does not stop it either', async () => {
    handler = (s) => current(10)(s) ?? { status: 200, body: deploy('web', 0) };
    const r = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', sre, { body: '{}', contentType: 'application/merge-patch+json' }));
    expect(r.passed).toBe(true);
    expect(r.audit['admission.fleetgate.io/scale-down-protection']).toBe('bypassed by break-glass group "sre": scale-down protection: this change would take it from 10 to 0 replicas, and no single change may take it to 0');

    const dead = upstreamFromEndpoint({ name: 'dead', url: 'http://127.0.0.1:1' });
    try {
      const d = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', sre, { body: '{}', contentType: 'application/merge-patch+json' }), defaultAdmissionRules(), dead);
      expect(d.passed).toBe(true);
      expect(d.audit['admission.fleetgate.io/scale-down-protection']).toMatch(/^bypassed by break-glass group "sre": not checked: /);
      const a = await run(ctxFor('PATCH', '/apis/apps/v1/namespaces/prod/deployments/web', alice, { body: '{}', contentType: 'application/merge-patch+json' }), defaultAdmissionRules(), dead);
      expect(a.error!.status.code).toBe(503);
    } finally {
      await dead.close();
    }
  });
});
