// k8s.io/apiserver/pkg/endpoints/request/requestinfo.go (RequestInfoFactory{APIPrefixes: {api, apis},
// GrouplessAPIPrefixes: {api}}) plus the long-running check the kube-apiserver configures. Authorization,
// audit, metrics and flow control all key off these fields, so they must match upstream exactly.

import { parseLabelSelector, type LabelSelector } from '../api/labels.js';
import { parseFieldSelector } from '../api/fields.js';
import { isValidPathSegmentName } from '../api/meta.js';

export interface RequestInfo {
  isResourceRequest: boolean;
  /** The URL path, percent-decoded as Go's url.URL.Path is. */
  path: string;
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  parts: string[];
  /** long-running per BasicLongRunningRequestCheck({watch,proxy},{attach,exec,proxy,log,portforward}) */
  longRunning: boolean;
  /** Raw ?fieldSelector= for list/watch/deletecollection (AuthorizeWithSelectors), '' otherwise. */
  fieldSelector: string;
  /** Raw ?labelSelector= for list/watch/deletecollection (AuthorizeWithSelectors), '' otherwise. */
  labelSelector: string;
  /**
   * Set when upstream's NewRequestInfo fails ("/api/v1/watch" with nothing after it): the request filter then
   * answers 500 `Internal error occurred: failed to create RequestInfo: <error>`.
   */
  error?: string;
}

const API_PREFIXES = new Set(['api', 'apis']);
const GROUPLESS_API_PREFIXES = new Set(['api']);
const SPECIAL_VERBS = new Set(['proxy', 'watch']);
const SPECIAL_VERBS_NO_SUBRESOURCES = new Set(['proxy']);
/** Lets /namespaces/{ns}/status be told apart from a resource named "status" inside a namespace. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
const VERBS_WITH_SELECTORS = new Set(['list', 'watch', 'deletecollection']);

const LONG_RUNNING_VERBS = new Set(['watch', 'proxy']);
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

/**
 * The path's segments between its leading and trailing slashes (empty ones inside kept, as strings.Split keeps
 * them). A loop, not replace and split: V8 splits a string that is not a literal in its runtime, ~3,700 instructions
 * a request with the regular expression (scenario 1's count).
 */
function splitPath(path: string): string[] {
  let from = 0;
  let to = path.length;
  while (from < to && path.charCodeAt(from) === 0x2f) from++;
  while (to > from && path.charCodeAt(to - 1) === 0x2f) to--;
  const parts: string[] = [];
  while (from < to) {
    let slash = path.indexOf('/', from);
    if (slash < 0 || slash > to) slash = to;
    parts.push(path.slice(from, slash));
    if (slash === to) break;
    from = slash + 1;
  }
  return parts;
}

/** url.PathUnescape; a path Go could not unescape would have been rejected earlier, so keep it raw then. */
function unescapePath(p: string): string {
  if (!p.includes('%')) return p;
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

/** Convert_Slice_string_To_bool: only "false" (any case) and "0" are false. */
function isTrue(v: string): boolean {
  return !(v === '0' || v.toLowerCase() === 'false');
}

const INT_RE = /^[+-]?[0-9]+$/;
function parsesAsInt64(v: string): boolean {
  if (!INT_RE.test(v)) return false;
  const b = BigInt(v);
  return b >= -(2n ** 63n) && b < 2n ** 63n;
}

/**
 * The name a list/watch targets through `fieldSelector=metadata.name=X`. DecodeParameters must succeed for the
 * whole ListOptions (numbers and both selectors), otherwise Go falls back to no name.
 */
function nameFromListOptions(query: URLSearchParams): { watch: boolean; name: string } {
  const watchRaw = query.get('watch');
  const watch = watchRaw !== null && isTrue(watchRaw);
  for (const k of ['timeoutSeconds', 'limit']) {
    const v = query.get(k);
    if (v !== null && !parsesAsInt64(v)) return { watch, name: '' };
  }
  let name: string | undefined;
  try {
    const ls: LabelSelector = parseLabelSelector(query.get('labelSelector') ?? '');
    void ls;
    name = parseFieldSelector(query.get('fieldSelector') ?? '').exact('metadata.name');
  } catch {
    return { watch, name: '' };
  }
  if (name !== undefined && isValidPathSegmentName(name).length === 0) return { watch, name };
  return { watch, name: '' };
}

/**
 * RequestInfoFactory.NewRequestInfo. `path` is the URL path as received (percent-encoded, e.g. URL.pathname);
 * it is decoded like Go's URL.Path before splitting. Upstream returns an error alongside a partial info only for
 * "/api/v1/watch" and "/api/v1/proxy" with nothing after them; we return the same partial info.
 */
export function newRequestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const decodedPath = unescapePath(path);
  const info: RequestInfo = {
    isResourceRequest: false,
    path: decodedPath,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
    longRunning: false,
    fieldSelector: '',
    labelSelector: '',
  };
  const done = (): RequestInfo => {
    info.longRunning = isLongRunning(info);
    return info;
  };

  let parts = splitPath(decodedPath);
  if (parts.length < 3 || !API_PREFIXES.has(parts[0]!)) return done();
  info.apiPrefix = parts[0]!;
  parts = parts.slice(1);
  if (!GROUPLESS_API_PREFIXES.has(info.apiPrefix)) {
    if (parts.length < 3) return done();
    info.apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  info.isResourceRequest = true;
  info.apiVersion = parts[0]!;
  parts = parts.slice(1);

  let verbViaPathPrefix = false;
  if (SPECIAL_VERBS.has(parts[0]!)) {
    if (parts.length < 2) {
      const q = query.toString();
      info.error = `unable to determine kind and namespace from url, ${path}${q ? '?' + q : ''}`;
      return done();
    }
    info.verb = parts[0]!;
    parts = parts.slice(1);
    verbViaPathPrefix = true;
  } else {
    switch (method.toUpperCase()) {
      case 'POST':
        info.verb = 'create';
        break;
      case 'GET':
      case 'HEAD':
        info.verb = 'get';
        break;
      case 'PUT':
        info.verb = 'update';
        break;
      case 'PATCH':
        info.verb = 'patch';
        break;
      case 'DELETE':
        info.verb = 'delete';
        break;
      default:
        info.verb = '';
    }
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1]!;
      // A step after the namespace name that is not a namespace subresource is a namespaced resource.
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
    }
  }
  info.parts = parts;

  if (parts.length >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.has(info.verb)) info.subresource = parts[2]!;
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 1) info.resource = parts[0]!;

  if (info.name === '' && info.verb === 'get') {
    const { watch, name } = nameFromListOptions(query);
    info.verb = watch ? 'watch' : 'list';
    info.name = name;
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';

  // The deprecated verb-via-path forms do not support selectors consistently, so they never carry them.
  if (!verbViaPathPrefix && VERBS_WITH_SELECTORS.has(info.verb)) {
    info.fieldSelector = query.get('fieldSelector') ?? '';
    info.labelSelector = query.get('labelSelector') ?? '';
  }
  return done();
}

/** BasicLongRunningRequestCheck as kube-apiserver configures it, plus its /debug/pprof/ rule. */
export function isLongRunning(info: Pick<RequestInfo, 'verb' | 'isResourceRequest' | 'subresource' | 'path'>): boolean {
  if (LONG_RUNNING_VERBS.has(info.verb)) return true;
  if (info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource)) return true;
  if (!info.isResourceRequest && info.path.startsWith('/debug/pprof/')) return true;
  return false;
}
