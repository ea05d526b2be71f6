// The sim's OpenAPI: kubectl apply validates server-side (fieldValidation found in /openapi/v3) and computes
// strategic merge patches from its compiled-in types, explain works for custom resources, and the documents
// follow kube-openapi's handler3 (hashes, ETags, redirects).

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call, type ClusterEndpoint } from '../support/http.js';
import { kubectl, type KubectlVersion } from '../support/kubectl.js';

let fleet: SimFleet;
let kc: string;
let ep: ClusterEndpoint;

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.demo.example.com}
spec:
  group: demo.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        description: Widget is a thing that does stuff.
        properties:
          spec:
            type: object
            description: Desired state of the widget.
            required: [size]
            properties:
              size: {type: integer, description: How big the widget is.}
              parts:
                type: array
                description: Named parts.
                items: {type: object, properties: {name: {type: string}, count: {type: integer}}}
`;

function deployment(name: string, imageA: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - {name: a, image: ${imageA}}
      - {name: b, image: busybox:1.36}
`;
}

beforeAll(async () => {
  fleet = await startSimFleet({ clusters: ['member-a'], nodesPerCluster: 1 });
  kc = fleet.member('member-a').kubeconfigPath;
  ep = { url: fleet.member('member-a').url, caPem: fleet.servingCA.certPem, token: fleet.adminToken };
  const file = join(fleet.dir, 'crd.yaml');
  await writeFile(file, CRD);
  const r = await kubectl('1.33', kc, ['apply', '-f', file]);
  expect(r.stderr).toBe('');
});
afterAll(async () => {
  await fleet?.close();
});

describe.each<KubectlVersion>(['1.27', '1.33'])('kubectl %s with the sim OpenAPI', (v) => {
  const tag = v.replace('.', '-');

  it('applies a two-container Deployment: created, unchanged, then one image changed and the other container kept', async () => {
    const name = `two-${tag}`;
    const file = join(fleet.dir, `${name}.yaml`);
    await writeFile(file, deployment(name, 'nginx:1.27'));
    const created = await kubectl(v, kc, ['apply', '-f', file]);
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe(`deployment.apps/${name} created`);
    const again = await kubectl(v, kc, ['apply', '-f', file]);
    expect(again.stdout.trim()).toBe(`deployment.apps/${name} unchanged`);

    await writeFile(file, deployment(name, 'nginx:1.28'));
    const changed = await kubectl(v, kc, ['apply', '-f', file, '-v=8']);
    expect(changed.stdout.trim()).toBe(`deployment.apps/${name} configured`);
    // Server-side validation was chosen from /openapi/v3 and the patch is a strategic one.
    expect(changed.stderr).toMatch(/PATCH.*deployments\/two-[\d-]+\?fieldManager=kubectl-client-side-apply&fieldValidation=Strict/);
    expect(changed.stderr).toContain('application/strategic-merge-patch+json');
    const d = JSON.parse((await kubectl(v, kc, ['get', 'deploy', name, '-n', 'default', '-o', 'json'])).stdout);
    expect(d.spec.template.spec.containers.map((c: any) => [c.name, c.image])).toEqual([
      ['a', 'nginx:1.28'],
      ['b', 'busybox:1.36'],
    ]);
  });

  it('applies and changes a custom resource', async () => {
    const file = join(fleet.dir, `w-${tag}.yaml`);
    const widget = (count: number) => `apiVersion: demo.example.com/v1\nkind: Widget\nmetadata: {name: w-${tag}, namespace: default}\nspec: {size: 3, parts: [{name: a, count: ${count}}, {name: b, count: 2}]}\n`;
    await writeFile(file, widget(1));
    expect((await kubectl(v, kc, ['apply', '-f', file])).stdout.trim()).toBe(`widget.demo.example.com/w-${tag} created`);
    await writeFile(file, widget(5));
    expect((await kubectl(v, kc, ['apply', '-f', file])).stdout.trim()).toBe(`widget.demo.example.com/w-${tag} configured`);
    const w = JSON.parse((await kubectl(v, kc, ['get', 'widget', `w-${tag}`, '-n', 'default', '-o', 'json'])).stdout);
    expect(w.spec.parts).toEqual([{ name: 'a', count: 5 }, { name: 'b', count: 2 }]);
  });

  it('explains a custom resource kind and its fields', async () => {
    const top = await kubectl(v, kc, ['explain', 'widgets']);
    expect(top.stderr).toBe('');
    expect(top.stdout).toContain('KIND:       Widget');
    expect(top.stdout).toContain('Widget is a thing that does stuff.');
    expect(top.stdout).toMatch(/^ {2}metadata\t<ObjectMeta>$/m);
    expect(top.stdout).toMatch(/^ {2}spec\t<Object>\n {4}Desired state of the widget\.$/m);
    const spec = await kubectl(v, kc, ['explain', 'widget.spec']);
    expect(spec.stdout).toMatch(/^ {2}size\t<integer> -required-\n {4}How big the widget is\.$/m);
    expect(spec.stdout).toMatch(/^ {2}parts\t<\[\]Object>$/m);
    const meta = await kubectl(v, kc, ['explain', 'widget.metadata.ownerReferences']);
    expect(meta.stdout).toMatch(/^ {2}uid\t<string> -required-$/m);
  });

  it('explain pods ends with an error, not a crash (built-in schemas are not served)', async () => {
    const r = await kubectl(v, kc, ['explain', 'pods']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('error: GVK map[group: kind:Pod version:v1] not found in OpenAPI schema');
  });
});

describe('OpenAPI documents', () => {
  const V3 = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)\?hash=[0-9A-F]{128}$/;

  it('lists every served group version in the v3 root, with an ETag honoured by If-None-Match', async () => {
    const root = await call(ep, 'GET', '/openapi/v3');
    expect(root.status).toBe(200);
    expect(root.headers['content-type']).toBe('application/json');
    const paths = root.json().paths;
    for (const gv of ['api/v1', 'apis/apps/v1', 'apis/rbac.authorization.k8s.io/v1', 'apis/authorization.k8s.io/v1', 'apis/apiextensions.k8s.io/v1', 'apis/demo.example.com/v1']) {
      expect(paths[gv]?.serverRelativeURL, gv).toMatch(V3);
    }
    const etag = root.headers.etag as string;
    expect(etag).toMatch(/^"[0-9A-F]{128}"$/);
    const again = await call(ep, 'GET', '/openapi/v3', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('describes built-in PATCH operations with fieldValidation and strategic merge patch, without component schemas', async () => {
    const url = (await call(ep, 'GET', '/openapi/v3')).json().paths['apis/apps/v1'].serverRelativeURL;
    const res = await call(ep, 'GET', url, { accept: 'application/json' });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, immutable');
    const doc = res.json();
    const item = doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'];
    expect(item.patch['x-kubernetes-group-version-kind']).toEqual({ group: 'apps', version: 'v1', kind: 'Deployment' });
    expect(item.patch['x-kubernetes-action']).toBe('patch');
    expect(item.patch.parameters.map((p: any) => p.name)).toEqual(['dryRun', 'fieldManager', 'fieldValidation', 'force']);
    expect(Object.keys(item.patch.requestBody.content)).toContain('application/strategic-merge-patch+json');
    expect(doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale'].patch['x-kubernetes-group-version-kind']).toEqual({ group: 'autoscaling', version: 'v1', kind: 'Scale' });
    const withGvk = Object.values(doc.components.schemas).filter((s: any) => s['x-kubernetes-group-version-kind']);
    expect(withGvk).toEqual([]);

    const stale = await call(ep, 'GET', '/openapi/v3/apis/apps/v1?hash=0123', { accept: 'application/json' });
    expect(stale.status).toBe(301);
    expect(stale.headers.location).toBe(url);
  });

  it('carries a CRD schema with its GVK and offers no strategic merge patch for custom resources', async () => {
    const url = (await call(ep, 'GET', '/openapi/v3')).json().paths['apis/demo.example.com/v1'].serverRelativeURL;
    const doc = (await call(ep, 'GET', url)).json();
    const widget = doc.components.schemas['com.example.demo.v1.Widget'];
    expect(widget['x-kubernetes-group-version-kind']).toEqual([{ group: 'demo.example.com', kind: 'Widget', version: 'v1' }]);
    expect(widget.properties.spec.required).toEqual(['size']);
    expect(widget.properties.metadata.allOf).toEqual([{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }]);
    const patch = doc.paths['/apis/demo.example.com/v1/namespaces/{namespace}/widgets/{name}'].patch;
    expect(Object.keys(patch.requestBody.content).sort()).toEqual(['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json']);
    expect(patch.parameters.map((p: any) => p.name)).toContain('fieldValidation');
  });

  it('serves an empty v2 document as gnostic protobuf', async () => {
    const res = await call(ep, 'GET', '/openapi/v2', { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    const json = await call(ep, 'GET', '/openapi/v2', { accept: 'application/json' });
    expect(json.json()).toEqual({ swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.34.4' }, paths: {}, definitions: {} });
  });
});
