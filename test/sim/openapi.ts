// OpenAPI v3 of a simulated cluster, served as kube-apiserver's kube-openapi handler3 serves it: a root document
// naming one document per group version (with a content hash in the URL), and per group version the paths with
// their operations, `x-kubernetes-action` and `x-kubernetes-group-version-kind`.
//
// What kubectl reads from it:
// - `--validate=strict` (the default) looks for a `fieldValidation` parameter on the PATCH operation of the
//   object's GVK (cli-runtime query_param_verifier_v3.go); finding it, kubectl sends fieldValidation=Strict and skips
//   client-side validation, which would need /openapi/v2.
// - `explain` renders the component schema whose `x-kubernetes-group-version-kind` names the GVK.
// - `apply` (1.29+) builds strategic-merge-patch metadata from that same component schema when the PATCH
//   operation accepts strategic-merge-patch+json. A built-in schema without x-kubernetes-patch-merge-key/strategy
//   would make apply replace whole lists (a two-container Deployment loses a container), so built-in kinds get no
//   component schema: apply falls back to /openapi/v2 (404 here) and then to its compiled-in types, and
//   `explain <built-in>` reports that it cannot find the resource. Custom resources get their CRD's schema.
// /openapi/v2 is an empty document (see serveOpenAPIV2): kubectl 1.27/1.28 insist on downloading it.

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExtraResource } from './discovery.js';
import type { SimResource } from './registry.js';

type Json = Record<string, unknown>;

interface GroupVersionDoc {
  /** "api/v1", "apis/apps/v1" */
  path: string;
  json: string;
  etag: string;
}

interface Docs {
  root: string;
  rootEtag: string;
  byPath: Map<string, GroupVersionDoc>;
}

const JSON_TYPE = 'application/json';

/**
 * Answers /openapi/v3 and /openapi/v3/<group version path>; returns false for any other path. path has no
 * trailing slash.
 */
export function serveOpenAPIV3(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
  resources: readonly SimResource[],
  extra: readonly ExtraResource[],
  gitVersion: string,
): boolean {
  if (path !== '/openapi/v3' && !path.startsWith('/openapi/v3/')) return false;
  const docs = openAPIDocs(resources, extra, gitVersion);
  if (path === '/openapi/v3') {
    serveContent(req, res, docs.root, docs.rootEtag, { 'Content-Type': JSON_TYPE });
    return true;
  }
  const gvPath = path.slice('/openapi/v3/'.length);
  res.setHeader('Vary', 'Accept');
  if (!acceptsJson(req.headers.accept)) {
    // handler3 would serve its protobuf form; a client that accepts nothing else gets 406 here.
    res.writeHead(406);
    res.end();
    return true;
  }
  const doc = docs.byPath.get(gvPath);
  if (!doc) {
    // handler3 returns without writing for a group version it does not have: an empty 200.
    res.writeHead(200);
    res.end();
    return true;
  }
  const headers: Record<string, string> = { 'Content-Type': JSON_TYPE };
  const hash = query.get('hash');
  if (hash) {
    if (hash !== doc.etag) {
      res.writeHead(301, { Location: serverRelativeURL(doc), 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<a href="${serverRelativeURL(doc)}">Moved Permanently</a>.\n\n`);
      return true;
    }
    headers['Cache-Control'] = 'public, immutable';
    headers['Expires'] = new Date(Date.now() + 365 * 86400_000).toUTCString();
  }
  serveContent(req, res, doc.json, doc.etag, headers);
  return true;
}

/** http.ServeContent's ETag handling: a matching If-None-Match (or *) gets 304 without a body. */
function serveContent(req: IncomingMessage, res: ServerResponse, body: string | Buffer, etag: string, headers: Record<string, string>): void {
  const quoted = `"${etag}"`;
  const inm = req.headers['if-none-match'];
  if (inm && inm.split(',').some((t) => { const v = t.trim().replace(/^W\//, ''); return v === quoted || v === '*'; })) {
    res.writeHead(304, { ETag: quoted });
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, ETag: quoted, 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((c) => {
    const t = c.split(';')[0].trim().toLowerCase();
    return t === 'application/json' || t === 'application/*' || t === '*/*';
  });
}

function serverRelativeURL(doc: GroupVersionDoc): string {
  return `/openapi/v3/${doc.path}?hash=${doc.etag}`;
}

// ---- documents, cached per resource set ----

const cache = new Map<string, Docs>();

function openAPIDocs(resources: readonly SimResource[], extra: readonly ExtraResource[], gitVersion: string): Docs {
  const key = [gitVersion, ...resources.map(signature), ...extra.map((x) => `${x.group}/${x.version}/${x.resource}`)].join('\n');
  let docs = cache.get(key);
  if (!docs) {
    docs = buildDocs(resources, extra, gitVersion);
    // Fleets hold a few clusters and CRDs come and go in tests; a handful of sets is plenty.
    if (cache.size >= 16) cache.delete(cache.keys().next().value!);
    cache.set(key, docs);
  }
  return docs;
}

function signature(r: SimResource): string {
  const crd = r.crd?.metadata;
  return `${r.group}/${r.version}/${r.resource}/${r.kind}/${r.namespaced}/${r.verbs.join(',')}/${(r.subresources ?? []).map((s) => s.name).join(',')}/${crd?.uid ?? ''}/${crd?.resourceVersion ?? ''}`;
}

function buildDocs(resources: readonly SimResource[], extra: readonly ExtraResource[], gitVersion: string): Docs {
  const gvs = new Map<string, { group: string; version: string; resources: SimResource[]; extra: ExtraResource[] }>();
  const entry = (group: string, version: string) => {
    const path = group ? `apis/${group}/${version}` : `api/${version}`;
    let e = gvs.get(path);
    if (!e) gvs.set(path, (e = { group, version, resources: [], extra: [] }));
    return e;
  };
  // Mirrors (events.k8s.io/v1 events) are resources of their own group version all the same.
  for (const r of resources) entry(r.group, r.version).resources.push(r);
  for (const x of extra) entry(x.group, x.version).extra.push(x);

  const byPath = new Map<string, GroupVersionDoc>();
  for (const [path, e] of [...gvs.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const json = JSON.stringify(groupVersionDocument(e.group, e.version, e.resources, e.extra, gitVersion));
    byPath.set(path, { path, json, etag: etagOf(json) });
  }
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const doc of byPath.values()) paths[doc.path] = { serverRelativeURL: serverRelativeURL(doc) };
  const root = JSON.stringify({ paths });
  return { root, rootEtag: etagOf(root), byPath };
}

/** handler3's computeETag: upper-case hex SHA-512 of the JSON. */
function etagOf(json: string | Buffer): string {
  return createHash('sha512').update(json).digest('hex').toUpperCase();
}

// ---- one group version ----

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function groupVersionDocument(group: string, version: string, rs: readonly SimResource[], xs: readonly ExtraResource[], gitVersion: string): Json {
  const tag = tagOf(group, version);
  const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const paths: Record<string, Json> = {
    [`${prefix}/`]: {
      get: {
        tags: [tag],
        description: 'get available resources',
        operationId: `get${upper(tag)}APIResources`,
        responses: { '200': { description: 'OK', content: { [JSON_TYPE]: { schema: ref(`${META}.APIResourceList`) } } }, '401': { description: 'Unauthorized' } },
      },
    },
  };
  const schemas: Record<string, unknown> = { ...metaSchemas() };
  for (const r of rs) {
    const kindSchema = r.crd ? crdSchemaName(group, version, r.kind) : undefined;
    if (r.crd) Object.assign(schemas, crdSchemas(r, kindSchema!));
    addResourcePaths(paths, prefix, tag, r, kindSchema);
  }
  for (const x of xs) addReviewPaths(paths, prefix, tag, x);
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: gitVersion },
    paths,
    components: {
      schemas,
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
  };
}

/** The tag and operation-id stem: "coreV1", "appsV1", "rbacAuthorizationV1", "stableExampleComV1". */
function tagOf(group: string, version: string): string {
  const words = (group || 'core').replace(/\.k8s\.io$/, '').split(/[.-]/).filter(Boolean);
  return words.map((w, i) => (i === 0 ? w : upper(w))).join('') + upper(version);
}

function upper(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

const param = (name: string, description: string, type = 'string'): Json => ({ name, in: 'query', description, schema: { type, uniqueItems: true } });
const P = {
  pretty: param('pretty', "If 'true', then the output is pretty printed."),
  dryRun: param('dryRun', 'When present, indicates that modifications should not be persisted. Valid value: All.'),
  fieldManager: param('fieldManager', 'A name associated with the actor or entity that is making these changes.'),
  fieldValidation: param(
    'fieldValidation',
    'How the server handles unknown or duplicate fields in the request (POST/PUT/PATCH): Ignore, Warn (the default) or Strict.',
  ),
  force: param('force', "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests.", 'boolean'),
  gracePeriodSeconds: param('gracePeriodSeconds', 'The duration in seconds before the object should be deleted.', 'integer'),
  ignoreStoreRead: param('ignoreStoreReadErrorWithClusterBreakingPotential', 'If set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.', 'boolean'),
  orphanDependents: param('orphanDependents', 'Deprecated: please use the PropagationPolicy.', 'boolean'),
  propagationPolicy: param('propagationPolicy', 'Whether and how garbage collection will be performed: Orphan, Background or Foreground.'),
  allowWatchBookmarks: param('allowWatchBookmarks', 'Requests watch events with type "BOOKMARK".', 'boolean'),
  continue: param('continue', 'The continue option should be set when retrieving more results from the server.'),
  fieldSelector: param('fieldSelector', 'A selector to restrict the list of returned objects by their fields.'),
  labelSelector: param('labelSelector', 'A selector to restrict the list of returned objects by their labels.'),
  limit: param('limit', 'The maximum number of responses to return for a list call.', 'integer'),
  resourceVersion: param('resourceVersion', 'Sets a constraint on what resource versions a request may be served from.'),
  resourceVersionMatch: param('resourceVersionMatch', 'Determines how resourceVersion is applied to list calls.'),
  sendInitialEvents: param('sendInitialEvents', 'Used with watch=true: the stream begins with synthetic events for the current state.', 'boolean'),
  timeoutSeconds: param('timeoutSeconds', 'Timeout for the list/watch call.', 'integer'),
  watch: param('watch', 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.', 'boolean'),
};
const pathParam = (name: string, description: string): Json => ({ name, in: 'path', description, required: true, schema: { type: 'string', uniqueItems: true } });

const LIST_PARAMS = [P.allowWatchBookmarks, P.continue, P.fieldSelector, P.labelSelector, P.limit, P.resourceVersion, P.resourceVersionMatch, P.sendInitialEvents, P.timeoutSeconds, P.watch];
const WRITE_PARAMS = [P.dryRun, P.fieldManager, P.fieldValidation];
const DELETE_PARAMS = [P.dryRun, P.gracePeriodSeconds, P.ignoreStoreRead, P.orphanDependents, P.propagationPolicy];
const DELETECOLLECTION_PARAMS = [P.continue, P.dryRun, P.fieldSelector, P.gracePeriodSeconds, P.ignoreStoreRead, P.labelSelector, P.limit, P.orphanDependents, P.propagationPolicy, P.resourceVersion, P.resourceVersionMatch, P.sendInitialEvents, P.timeoutSeconds];
const BUILTIN_PATCH_TYPES = ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'];
// Custom resources do not support strategic merge patch; their PATCH operations do not offer it.
const CUSTOM_PATCH_TYPES = ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json'];
const RESPONSE_TYPES = [JSON_TYPE, 'application/yaml', 'application/vnd.kubernetes.protobuf'];

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

/** Response or request content: the component schema when the document has one, else none (built-in kinds). */
function content(types: readonly string[], schema: string | undefined): Json {
  const out: Json = {};
  for (const t of types) out[t] = schema ? { schema: ref(schema) } : {};
  return out;
}

function operation(o: {
  tag: string;
  action: string;
  verb: string;
  description: string;
  id: string;
  gvk: Gvk;
  params?: Json[];
  body?: Json;
  codes: string[];
  schema?: string;
}): Json {
  const responses: Json = {};
  for (const c of o.codes) responses[c] = { description: c === '200' ? 'OK' : c === '201' ? 'Created' : 'Accepted', content: content(RESPONSE_TYPES, o.schema) };
  responses['401'] = { description: 'Unauthorized' };
  return {
    tags: [o.tag],
    description: o.description,
    operationId: o.id,
    ...(o.params?.length ? { parameters: o.params } : {}),
    ...(o.body ? { requestBody: o.body } : {}),
    responses,
    'x-kubernetes-action': o.action,
    'x-kubernetes-group-version-kind': o.gvk,
  };
}

function addResourcePaths(paths: Record<string, Json>, prefix: string, tag: string, r: SimResource, kindSchema: string | undefined): void {
  const gvk: Gvk = { group: r.group, version: r.version, kind: r.kind };
  const T = upper(tag);
  const ns = r.namespaced ? 'Namespaced' : '';
  const base = r.namespaced ? `${prefix}/namespaces/{namespace}/${r.resource}` : `${prefix}/${r.resource}`;
  const nsParam = pathParam('namespace', 'object name and auth scope, such as for teams and projects');
  const scope = r.namespaced ? [nsParam, P.pretty] : [P.pretty];
  const item = [pathParam('name', `name of the ${r.kind}`), ...scope];
  const has = (v: string) => r.verbs.includes(v);
  const patchTypes = r.crd ? CUSTOM_PATCH_TYPES : BUILTIN_PATCH_TYPES;
  const objectBody = (schema: string | undefined) => ({ content: content(['*/*'], schema), required: true });
  const deleteBody = { content: content(['*/*'], `${META}.DeleteOptions`) };
  const patchBody = { content: content(patchTypes, `${META}.Patch`), required: true };

  const collection: Json = { parameters: scope };
  if (has('list')) collection.get = operation({ tag, action: 'list', verb: 'list', description: `list or watch objects of kind ${r.kind}`, id: `list${T}${ns}${r.kind}`, gvk, params: LIST_PARAMS, codes: ['200'], schema: kindSchema && `${kindSchema}List` });
  if (has('create')) collection.post = operation({ tag, action: 'post', verb: 'create', description: `create a ${r.kind}`, id: `create${T}${ns}${r.kind}`, gvk, params: WRITE_PARAMS, body: objectBody(kindSchema), codes: ['200', '201', '202'], schema: kindSchema });
  if (has('deletecollection')) collection.delete = operation({ tag, action: 'deletecollection', verb: 'deletecollection', description: `delete collection of ${r.kind}`, id: `deleteCollection${T}${ns}${r.kind}`, gvk, params: DELETECOLLECTION_PARAMS, body: deleteBody, codes: ['200'], schema: `${META}.Status` });
  if (Object.keys(collection).length > 1) paths[base] = collection;

  const one: Json = { parameters: item };
  if (has('get')) one.get = operation({ tag, action: 'get', verb: 'get', description: `read the specified ${r.kind}`, id: `read${T}${ns}${r.kind}`, gvk, codes: ['200'], schema: kindSchema });
  if (has('update')) one.put = operation({ tag, action: 'put', verb: 'update', description: `replace the specified ${r.kind}`, id: `replace${T}${ns}${r.kind}`, gvk, params: WRITE_PARAMS, body: objectBody(kindSchema), codes: ['200', '201'], schema: kindSchema });
  if (has('delete')) one.delete = operation({ tag, action: 'delete', verb: 'delete', description: `delete a ${r.kind}`, id: `delete${T}${ns}${r.kind}`, gvk, params: DELETE_PARAMS, body: deleteBody, codes: ['200', '202'], schema: `${META}.Status` });
  if (has('patch')) one.patch = operation({ tag, action: 'patch', verb: 'patch', description: `partially update the specified ${r.kind}`, id: `patch${T}${ns}${r.kind}`, gvk, params: [...WRITE_PARAMS, P.force], body: patchBody, codes: ['200', '201'], schema: kindSchema });
  if (Object.keys(one).length > 1) paths[`${base}/{name}`] = one;

  if (r.namespaced && has('list')) {
    paths[`${prefix}/${r.resource}`] = {
      parameters: [P.pretty],
      get: operation({ tag, action: 'list', verb: 'list', description: `list or watch objects of kind ${r.kind}`, id: `list${T}${r.kind}ForAllNamespaces`, gvk, params: LIST_PARAMS, codes: ['200'], schema: kindSchema && `${kindSchema}List` }),
    };
  }

  for (const s of r.subresources ?? []) {
    const sgvk: Gvk = { group: s.group ?? r.group, version: s.version ?? r.version, kind: s.kind };
    const S = upper(s.name);
    const sSchema = s.kind === r.kind && sgvk.group === r.group ? kindSchema : undefined;
    const path: Json = { parameters: item };
    const v = (x: string) => s.verbs.includes(x);
    if (s.name === 'exec' || s.name === 'attach' || s.name === 'portforward' || s.name === 'proxy') {
      // Streaming endpoints are "connect" actions with the options kind as their GVK.
      if (v('get')) path.get = operation({ tag, action: 'connect', verb: 'get', description: `connect GET requests to ${s.name} of ${r.kind}`, id: `connect${T}Get${ns}${r.kind}${S}`, gvk: sgvk, codes: ['200'] });
      if (v('create')) path.post = operation({ tag, action: 'connect', verb: 'create', description: `connect POST requests to ${s.name} of ${r.kind}`, id: `connect${T}Post${ns}${r.kind}${S}`, gvk: sgvk, codes: ['200'] });
    } else {
      if (v('get')) path.get = operation({ tag, action: 'get', verb: 'get', description: `read ${s.name} of the specified ${r.kind}`, id: `read${T}${ns}${r.kind}${S}`, gvk: sgvk, codes: ['200'], schema: sSchema });
      if (v('create')) path.post = operation({ tag, action: 'post', verb: 'create', description: `create ${s.name} of a ${r.kind}`, id: `create${T}${ns}${r.kind}${S}`, gvk: sgvk, params: WRITE_PARAMS, body: objectBody(sSchema), codes: ['200', '201', '202'], schema: sSchema });
      if (v('update')) path.put = operation({ tag, action: 'put', verb: 'update', description: `replace ${s.name} of the specified ${r.kind}`, id: `replace${T}${ns}${r.kind}${S}`, gvk: sgvk, params: WRITE_PARAMS, body: objectBody(sSchema), codes: ['200', '201'], schema: sSchema });
      if (v('patch')) path.patch = operation({ tag, action: 'patch', verb: 'patch', description: `partially update ${s.name} of the specified ${r.kind}`, id: `patch${T}${ns}${r.kind}${S}`, gvk: sgvk, params: [...WRITE_PARAMS, P.force], body: patchBody, codes: ['200', '201'], schema: sSchema });
    }
    if (Object.keys(path).length > 1) paths[`${base}/{name}/${s.name}`] = path;
  }
}

/** The access and identity reviews: create-only, namespaced (local SAR) or not. */
function addReviewPaths(paths: Record<string, Json>, prefix: string, tag: string, x: ExtraResource): void {
  const base = x.namespaced ? `${prefix}/namespaces/{namespace}/${x.resource}` : `${prefix}/${x.resource}`;
  const scope = x.namespaced ? [pathParam('namespace', 'object name and auth scope, such as for teams and projects'), P.pretty] : [P.pretty];
  const gvk: Gvk = { group: x.group, version: x.version, kind: x.kind };
  paths[base] = {
    parameters: scope,
    post: operation({ tag, action: 'post', verb: 'create', description: `create a ${x.kind}`, id: `create${upper(tag)}${x.namespaced ? 'Namespaced' : ''}${x.kind}`, gvk, params: WRITE_PARAMS, body: { content: content(['*/*'], undefined), required: true }, codes: ['200', '201', '202'] }),
  };
}

// ---- custom resource schemas ----

/** util.ToRESTFriendlyName of "group/version/kind": the group's DNS labels reversed ("com.example.stable.v1.CronTab"). */
function crdSchemaName(group: string, version: string, kind: string): string {
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

function crdSchemas(r: SimResource, name: string): Record<string, unknown> {
  const spec = (r.crd as any).spec;
  const v = (spec.versions as any[]).find((x) => x.name === r.version);
  const source = v?.schema?.openAPIV3Schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const schema = structuredClone(source) as Json;
  const props = { ...((schema.properties as Json | undefined) ?? {}) };
  props.apiVersion = {
    description: 'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
    type: 'string',
  };
  props.kind = {
    description: 'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
    type: 'string',
  };
  props.metadata = {
    description: "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    allOf: [ref(`${META}.ObjectMeta`)],
  };
  schema.type ??= 'object';
  schema.properties = props;
  schema['x-kubernetes-group-version-kind'] = [{ group: r.group, kind: r.kind, version: r.version }];
  const list = {
    description: `${r.listKind} is a list of ${r.kind}`,
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: props.apiVersion,
      items: { description: `List of ${spec.names.plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md`, type: 'array', items: ref(name) },
      kind: props.kind,
      metadata: { description: 'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds', allOf: [ref(`${META}.ListMeta`)] },
    },
    'x-kubernetes-group-version-kind': [{ group: r.group, kind: r.listKind, version: r.version }],
  };
  return { [name]: schema, [`${name}List`]: list };
}

// ---- meta/v1 schemas every document refers to ----

let metaCache: Record<string, unknown> | undefined;

function metaSchemas(): Record<string, unknown> {
  return (metaCache ??= {
    [`${META}.APIResourceList`]: { description: 'APIResourceList is a list of APIResource, it is used to expose the name of the resources supported in a specific group and version, and if the resource is namespaced.', type: 'object', required: ['groupVersion', 'resources'], properties: { apiVersion: str('APIVersion of this representation.'), groupVersion: str('groupVersion is the group and version this APIResourceList is for.'), kind: str('Kind of this representation.'), resources: { description: 'resources contains the name of the resources and if they are namespaced.', type: 'array', items: { type: 'object' } } } },
    [`${META}.DeleteOptions`]: {
      description: 'DeleteOptions may be provided when deleting an API object.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        dryRun: { description: 'When present, indicates that modifications should not be persisted.', type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'atomic' },
        gracePeriodSeconds: { description: 'The duration in seconds before the object should be deleted.', type: 'integer', format: 'int64' },
        ignoreStoreReadErrorWithClusterBreakingPotential: { description: 'if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.', type: 'boolean' },
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        orphanDependents: { description: 'Deprecated: please use the PropagationPolicy.', type: 'boolean' },
        preconditions: { description: 'Must be fulfilled before a deletion is carried out.', allOf: [ref(`${META}.Preconditions`)] },
        propagationPolicy: str('Whether and how garbage collection will be performed.'),
      },
    },
    [`${META}.FieldsV1`]: { description: 'FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.', type: 'object' },
    [`${META}.ListMeta`]: {
      description: 'ListMeta describes metadata that synthetic resources must have, including lists and various status objects.',
      type: 'object',
      properties: {
        continue: str('continue may be set if the user set a limit on the number of items returned.'),
        remainingItemCount: { description: 'remainingItemCount is the number of subsequent items in the list which are not included in this list response.', type: 'integer', format: 'int64' },
        resourceVersion: str("String that identifies the server's internal version of this object."),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
      },
    },
    [`${META}.ManagedFieldsEntry`]: {
      description: 'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the version of this resource that this field set applies to.'),
        fieldsType: str('FieldsType is the discriminator for the different fields format and version.'),
        fieldsV1: { description: 'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.', allOf: [ref(`${META}.FieldsV1`)] },
        manager: str('Manager is an identifier of the workflow managing these fields.'),
        operation: str("Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'."),
        subresource: str('Subresource is the name of the subresource used to update that object.'),
        time: { description: 'Time is the timestamp of when the ManagedFields entry was added.', allOf: [ref(`${META}.Time`)] },
      },
    },
    [`${META}.ObjectMeta`]: {
      description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
      type: 'object',
      properties: {
        annotations: { description: 'Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata.', type: 'object', additionalProperties: { type: 'string', default: '' } },
        creationTimestamp: { description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', allOf: [ref(`${META}.Time`)] },
        deletionGracePeriodSeconds: { description: 'Number of seconds allowed for this object to gracefully terminate before it will be removed from the system.', type: 'integer', format: 'int64' },
        deletionTimestamp: { description: 'DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted.', allOf: [ref(`${META}.Time`)] },
        finalizers: { description: 'Must be empty before the object is deleted from the registry.', type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'set', 'x-kubernetes-patch-strategy': 'merge' },
        generateName: str('GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided.'),
        generation: { description: 'A sequence number representing a specific generation of the desired state.', type: 'integer', format: 'int64' },
        labels: { description: 'Map of string keys and values that can be used to organize and categorize (scope and select) objects.', type: 'object', additionalProperties: { type: 'string', default: '' } },
        managedFields: { description: 'ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.', type: 'array', items: { default: {}, allOf: [ref(`${META}.ManagedFieldsEntry`)] }, 'x-kubernetes-list-type': 'atomic' },
        name: str('Name must be unique within a namespace.'),
        namespace: str('Namespace defines the space within which each name must be unique.'),
        ownerReferences: {
          description: 'List of objects depended by this object.',
          type: 'array',
          items: { default: {}, allOf: [ref(`${META}.OwnerReference`)] },
          'x-kubernetes-list-map-keys': ['uid'],
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-patch-merge-key': 'uid',
          'x-kubernetes-patch-strategy': 'merge',
        },
        resourceVersion: str('An opaque value that represents the internal version of this object.'),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
        uid: str('UID is the unique in time and space value for this object.'),
      },
    },
    [`${META}.OwnerReference`]: {
      description: 'OwnerReference contains enough information to let you identify an owning object.',
      type: 'object',
      required: ['apiVersion', 'kind', 'name', 'uid'],
      properties: {
        apiVersion: { ...str('API version of the referent.'), default: '' },
        blockOwnerDeletion: { description: 'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.', type: 'boolean' },
        controller: { description: 'If true, this reference points to the managing controller.', type: 'boolean' },
        kind: { ...str('Kind of the referent.'), default: '' },
        name: { ...str('Name of the referent.'), default: '' },
        uid: { ...str('UID of the referent.'), default: '' },
      },
      'x-kubernetes-map-type': 'atomic',
    },
    [`${META}.Patch`]: { description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.', type: 'object' },
    [`${META}.Preconditions`]: {
      description: 'Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.',
      type: 'object',
      properties: { resourceVersion: str('Specifies the target ResourceVersion'), uid: str('Specifies the target UID.') },
    },
    [`${META}.Status`]: {
      description: 'Status is a return value for calls that don\'t return other objects.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        code: { description: 'Suggested HTTP return code for this status, 0 if not set.', type: 'integer', format: 'int32' },
        details: { description: 'Extended data associated with the reason.', type: 'object' },
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        message: str('A human-readable description of the status of this operation.'),
        metadata: { description: 'Standard list metadata.', default: {}, allOf: [ref(`${META}.ListMeta`)] },
        reason: str('A machine-readable description of why this operation is in the "Failure" status.'),
        status: str('Status of the operation. One of: "Success" or "Failure".'),
      },
    },
    [`${META}.Time`]: { description: 'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.', type: 'string', format: 'date-time' },
  });
}

function str(description: string): Json {
  return { description, type: 'string' };
}

// ---- /openapi/v2 ----
// kubectl 1.27 and 1.28 fetch /openapi/v2 (as gnostic protobuf) before any apply or explain and give up on a 404.
// They find fieldValidation in the v3 document all the same, so an empty v2 document (no paths, no definitions)
// is enough: validation is left to the server and apply's patch falls through to the compiled-in types.

const V2_TYPES: Record<string, 'json' | 'pb'> = {
  'application/json': 'json',
  'application/com.github.proto-openapi.spec.v2@v1.0+protobuf': 'pb',
  'application/com.github.proto-openapi.spec.v2.v1.0+protobuf': 'pb',
};
// The deprecated "@v1.0" name is not a valid media type for Go's mime parser, so the handler answers with this one.
const V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

export function serveOpenAPIV2(req: IncomingMessage, res: ServerResponse, gitVersion: string): void {
  res.setHeader('Vary', 'Accept');
  let form: 'json' | 'pb' | undefined;
  for (const clause of (req.headers.accept || '*/*').split(',')) {
    const t = clause.split(';')[0].trim().toLowerCase();
    form = t === '*/*' || t === 'application/*' ? 'json' : V2_TYPES[t];
    if (form) break;
  }
  if (!form) {
    res.writeHead(406);
    res.end();
    return;
  }
  const doc = form === 'json' ? Buffer.from(JSON.stringify(emptyV2(gitVersion))) : emptyV2Protobuf(gitVersion);
  serveContent(req, res, doc, etagOf(doc), { 'Content-Type': form === 'json' ? JSON_TYPE : V2_PROTOBUF });
}

function emptyV2(gitVersion: string): Json {
  return { swagger: '2.0', info: { title: 'Kubernetes', version: gitVersion }, paths: {}, definitions: {} };
}

/** The same document as a gnostic openapi_v2.Document: swagger=1, info=2 {title=1, version=2}, paths=8, definitions=9. */
function emptyV2Protobuf(gitVersion: string): Buffer {
  const field = (n: number, payload: Buffer | string): Buffer => {
    const b = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
    if (b.length > 127) throw new Error('emptyV2Protobuf: field too long for a one-byte length');
    return Buffer.concat([Buffer.from([(n << 3) | 2, b.length]), b]);
  };
  const info = Buffer.concat([field(1, 'Kubernetes'), field(2, gitVersion)]);
  return Buffer.concat([field(1, '2.0'), field(2, info), field(8, Buffer.alloc(0)), field(9, Buffer.alloc(0))]);
}
