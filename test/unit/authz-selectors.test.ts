// AuthorizeWithSelectors (on by default since Kubernetes 1.32): a cached list or watch is reviewed with its field
// and label selectors, as kube-apiserver's authorization filter passes them to a webhook authorizer, so an
// authorizer that allows only a narrowed read (a node's own pods, a tenant's label) allows it through the cache too.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributesOf, fieldSelectorRequirements, fleetReadAuthorizer, labelSelectorRequirements } from '../../src/authz/cachedreads.js';
import { decisionKey } from '../../src/authz/decisioncache.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { upstreamFromEndpoint, type Upstream } from '../../src/upstream/client.js';
import { subjectAccessReview } from '../../src/upstream/forward.js';

const user = { username: 'node-reader', groups: ['system:authenticated'] };
const info = (method: string, path: string, query = '') => newRequestInfo(method, path, new URLSearchParams(query));

describe('selectors in the attributes of a cached read', () => {
  it('carries a list\'s selectors as review requirements: fields in their sorted order, labels by key', () => {
    const a = attributesOf(user, info('GET', '/api/v1/namespaces/ns/pods', 'fieldSelector=status.phase!=Failed,spec.nodeName=n1&labelSelector=tier notin (x),app in (web,api),!old,gen>3,team'));
    expect(a.verb).toBe('list');
    expect(a.fieldSelector).toEqual([
      { key: 'spec.nodeName', operator: 'In', values: ['n1'] },
      { key: 'status.phase', operator: 'NotIn', values: ['Failed'] },
    ]);
    // gt and lt are left out: the review then asks about a broader read, never a narrower one. A set's values are
    // sorted, as labels.Parse keeps them.
    expect(a.labelSelector).toEqual([
      { key: 'app', operator: 'In', values: ['api', 'web'] },
      { key: 'old', operator: 'DoesNotExist' },
      { key: 'team', operator: 'Exists' },
      { key: 'tier', operator: 'NotIn', values: ['x'] },
    ]);
    expect(attributesOf(user, info('GET', '/api/v1/pods', 'watch=1&labelSelector=a==b')).labelSelector).toEqual([{ key: 'a', operator: 'In', values: ['b'] }]);
  });

  it('leaves them out where kube does: a GET by name, the deprecated /watch/ paths, nothing to express, a selector that does not parse', () => {
    for (const a of [
      attributesOf(user, info('GET', '/api/v1/namespaces/ns/pods/p', 'labelSelector=a=b')),
      attributesOf(user, info('GET', '/api/v1/watch/namespaces/ns/pods', 'labelSelector=a=b&fieldSelector=spec.nodeName=n1')),
      attributesOf(user, info('GET', '/api/v1/pods', 'labelSelector=gen>3,gen<9&fieldSelector=')),
      attributesOf(user, info('GET', '/api/v1/pods', 'labelSelector=a in (b&fieldSelector=nodeName')),
    ]) {
      expect(a.fieldSelector).toBeUndefined();
      expect(a.labelSelector).toBeUndefined();
    }
    expect(fieldSelectorRequirements('')).toBeUndefined();
    expect(labelSelectorRequirements('')).toBeUndefined();
  });

  it('a decision is cached per selector', () => {
    const k = (q: string) => decisionKey(attributesOf(user, info('GET', '/api/v1/pods', q)));
    expect(k('fieldSelector=spec.nodeName=n1')).not.toBe(k('fieldSelector=spec.nodeName=n2'));
    expect(k('labelSelector=a=b')).not.toBe(k(''));
    expect(k('labelSelector=a=b')).toBe(k('labelSelector=a==b'));
  });
});

describe('the SubjectAccessReview of a cached read', () => {
  // A control plane whose authorizer is a webhook that allows listing pods only on node n1, as a node authorizer
  // would: it reads the requirements the review carries.
  const reviews: any[] = [];
  let server: Server;
  let up: Upstream;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const review = JSON.parse(body);
        reviews.push(review);
        const fs = review.spec.resourceAttributes?.fieldSelector?.requirements ?? [];
        const allowed = fs.some((r: any) => r.key === 'spec.nodeName' && r.operator === 'In' && r.values.length === 1 && r.values[0] === 'n1');
        res.writeHead(201, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ ...review, status: allowed ? { allowed: true, reason: 'node n1' } : { allowed: false } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    up = upstreamFromEndpoint({ name: 'control-plane', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const ctx = (query: string) =>
    ({ user, info: info('GET', '/api/v1/pods', query), auditAnnotations: undefined, log: { warn() {} } }) as unknown as RequestContext;

  it('sends the requirements, and the read they narrow is allowed where the whole one is not', async () => {
    const authorize = fleetReadAuthorizer((attrs) => subjectAccessReview(up, attrs));
    await expect(authorize(ctx('fieldSelector=spec.nodeName%3Dn1'))).resolves.toBeUndefined();
    expect(reviews.at(-1).spec.resourceAttributes).toEqual({
      namespace: '',
      verb: 'list',
      group: '',
      version: 'v1',
      resource: 'pods',
      subresource: '',
      name: '',
      fieldSelector: { requirements: [{ key: 'spec.nodeName', operator: 'In', values: ['n1'] }] },
    });
    await expect(authorize(ctx('fieldSelector=spec.nodeName%3Dn2'))).rejects.toMatchObject({ status: { code: 403 } });
    await expect(authorize(ctx(''))).rejects.toMatchObject({ status: { code: 403 } });
    expect(reviews.at(-1).spec.resourceAttributes).not.toHaveProperty('fieldSelector');
    expect(reviews.at(-1).spec.resourceAttributes).not.toHaveProperty('labelSelector');
  });
});
