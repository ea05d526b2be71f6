import { describe, expect, it } from 'vitest';
import { isLongRunning, newRequestInfo } from '../../src/request/requestinfo.js';

function info(method: string, url: string) {
  const u = new URL(url, 'https://x');
  return newRequestInfo(method, u.pathname, u.searchParams);
}

// apiserver/pkg/endpoints/request/requestinfo_test.go TestGetAPIRequestInfo
describe('resource requests (upstream table)', () => {
  const cases: Array<[string, string, string, string, string, string, string, string, string, string, string[]]> = [
    ['GET', '/api/v1/namespaces', 'list', 'api', '', 'v1', '', 'namespaces', '', '', ['namespaces']],
    ['GET', '/api/v1/namespaces/other', 'get', 'api', '', 'v1', 'other', 'namespaces', '', 'other', ['namespaces', 'other']],
    ['GET', '/api/v1/namespaces/other/pods', 'list', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
    ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
    ['GET', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
    ['HEAD', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
    // The namespace of a Namespace object is its own name (RBAC relies on this); the upstream table row says ''.
    ['PATCH', '/api/v1/namespaces/new-namespace', 'patch', 'api', '', 'v1', 'new-namespace', 'namespaces', '', 'new-namespace', ['namespaces', 'new-namespace']],
    ['GET', '/api/v1/proxy/namespaces/other/pods/foo', 'proxy', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
    [
      'GET',
      '/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource',
      'proxy',
      'api',
      '',
      'v1',
      'other',
      'pods',
      '',
      'foo',
      ['pods', 'foo', 'subpath', 'not', 'a', 'subresource'],
    ],
    ['GET', '/api/v1/watch/pods', 'watch', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/pods?watch=true', 'watch', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/pods?watch=false', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/namespaces/other/pods?watch=1', 'watch', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/namespaces/other/pods?watch=0', 'list', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['GET', '/api/v1/namespaces/other/pods/foo/status', 'get', 'api', '', 'v1', 'other', 'pods', 'status', 'foo', ['pods', 'foo', 'status']],
    ['GET', '/api/v1/namespaces/other/pods/foo/proxy/subpath', 'get', 'api', '', 'v1', 'other', 'pods', 'proxy', 'foo', ['pods', 'foo', 'proxy', 'subpath']],
    ['PUT', '/api/v1/namespaces/other/finalize', 'update', 'api', '', 'v1', 'other', 'namespaces', 'finalize', 'other', ['namespaces', 'other', 'finalize']],
    ['PUT', '/api/v1/namespaces/other/status', 'update', 'api', '', 'v1', 'other', 'namespaces', 'status', 'other', ['namespaces', 'other', 'status']],
    ['PATCH', '/api/v1/namespaces/other/pods/foo', 'patch', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
    ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
    ['POST', '/api/v1/namespaces/other/pods', 'create', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['DELETE', '/api/v1/nodes', 'deletecollection', 'api', '', 'v1', '', 'nodes', '', '', ['nodes']],
    ['DELETE', '/api/v1/namespaces', 'deletecollection', 'api', '', 'v1', '', 'namespaces', '', '', ['namespaces']],
    ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
    ['DELETE', '/apis/extensions/v1/namespaces/other/pods', 'deletecollection', 'apis', 'extensions', 'v1', 'other', 'pods', '', '', ['pods']],
    ['POST', '/apis/extensions/v1/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1', 'other', 'pods', '', '', ['pods']],
    ['POST', '/apis/extensions/v1beta3/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1beta3', 'other', 'pods', '', '', ['pods']],
  ];
  it.each(cases)('%s %s', (method, url, verb, prefix, group, version, ns, resource, sub, name, parts) => {
    const i = info(method, url);
    expect(i.isResourceRequest).toBe(true);
    expect(i.error).toBeUndefined();
    expect({ verb: i.verb, prefix: i.apiPrefix, group: i.apiGroup, version: i.apiVersion, ns: i.namespace, resource: i.resource, sub: i.subresource, name: i.name, parts: i.parts }).toEqual({
      verb,
      prefix,
      group,
      version,
      ns,
      resource,
      sub,
      name,
      parts,
    });
  });
});

describe('non-resource requests (upstream TestGetNonAPIRequestInfo and error cases)', () => {
  it.each([
    ['/api/version/resource', true],
    ['/apis/group/version/resource/name/subresource', true],
    ['/api/version/resource/name/subresource', true],
    ['/apis/batch/v1/job', true],
    ['/apis/batch/v1/job/foo', true],
    ['/apis/batch/v1/job/foo/scale', true],
    ['/not-api/version/resource', false],
    ['/apis/extensions/v1beta1', false],
    ['/apis/extensions/v1beta1/', false],
    ['/api/version', false],
    ['/api', false],
    ['/', false],
    ['', false],
    ['/api/version/', false],
    ['/apis/group/version/', false],
    ['/badprefix/version/resource', false],
    ['/apis/version/resource', false],
  ])('%j resource=%s', (path, want) => expect(newRequestInfo('GET', path, new URLSearchParams()).isResourceRequest).toBe(want));

  it('non-resource requests use the lower-cased HTTP method as verb', () => {
    const i = info('POST', '/healthz');
    expect([i.verb, i.path, i.isResourceRequest, i.longRunning]).toEqual(['post', '/healthz', false, false]);
  });

  it('a bare /watch or /proxy is the upstream error case', () => {
    const i = info('GET', '/api/v1/watch');
    expect(i.isResourceRequest).toBe(true);
    expect(i.error).toBe('unable to determine kind and namespace from url, /api/v1/watch');
  });
});

// requestinfo_test.go TestFieldSelectorParsing
describe('name from fieldSelector metadata.name', () => {
  it.each([
    ['/apis/group/version/resource', '', 'list'],
    ['/apis/group/version/resource?fieldSelector=metadata.name=name1', 'name1', 'list'],
    ['/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1', 'name1', 'watch'],
    ['/apis/group/version/resource?fieldSelector=foo=bar', '', 'list'],
    ['/apis/group/version/resource?fieldSelector=metadata.name=name1,foo', '', 'list'],
    ['/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true', '', 'watch'],
    ['/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false', '', 'list'],
    // A decode failure anywhere in ListOptions drops the name, keeping only the raw watch flag.
    ['/api/v1/pods?fieldSelector=metadata.name%3Dp&limit=x&watch=1', '', 'watch'],
    ['/api/v1/pods?fieldSelector=metadata.name%3Dp&labelSelector=a%20b', '', 'list'],
    // Only names usable as a path segment.
    ['/api/v1/pods?fieldSelector=metadata.name%3Da%2Fb', '', 'list'],
    ['/api/v1/pods?fieldSelector=metadata.name%3D..', '', 'list'],
    ['/api/v1/pods?fieldSelector=metadata.name%3D%3D%3Dx', '', 'list'],
    ['/api/v1/pods?fieldSelector=metadata.name%3D%3Dx', 'x', 'list'],
    ['/api/v1/pods?fieldSelector=metadata.name!%3Dx', '', 'list'],
  ])('%s -> name %j verb %s', (url, name, verb) => {
    const i = info('GET', url);
    expect([i.name, i.verb]).toEqual([name, verb]);
  });

  it('does not rename a DELETE with a name selector to delete', () => {
    expect(info('DELETE', '/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp').verb).toBe('deletecollection');
  });
});

describe('selectors for authorization and long-running requests', () => {
  it('records raw selectors only for list/watch/deletecollection not via the path prefix', () => {
    const l = info('GET', '/api/v1/pods?labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1');
    expect([l.labelSelector, l.fieldSelector]).toEqual(['app=web', 'spec.nodeName=n1']);
    expect(info('GET', '/api/v1/watch/pods?labelSelector=app%3Dweb').labelSelector).toBe('');
    expect(info('GET', '/api/v1/namespaces/ns/pods/p?labelSelector=a').labelSelector).toBe('');
    expect(info('DELETE', '/api/v1/namespaces/ns/pods?labelSelector=a').labelSelector).toBe('a');
  });

  it.each([
    ['GET', '/api/v1/pods?watch=1', true],
    ['GET', '/api/v1/watch/pods', true],
    ['GET', '/api/v1/proxy/namespaces/ns/pods/p', true],
    ['POST', '/api/v1/namespaces/ns/pods/p/exec', true],
    ['GET', '/api/v1/namespaces/ns/pods/p/log', true],
    ['POST', '/api/v1/namespaces/ns/pods/p/attach', true],
    ['POST', '/api/v1/namespaces/ns/pods/p/portforward', true],
    ['GET', '/api/v1/namespaces/ns/services/s/proxy/x', true],
    ['GET', '/api/v1/pods', false],
    ['GET', '/api/v1/namespaces/ns/pods/p/status', false],
    ['GET', '/debug/pprof/profile', true],
    ['GET', '/healthz', false],
  ])('%s %s long-running=%s', (method, url, want) => expect(info(method, url).longRunning).toBe(want));

  it('isLongRunning works on partial infos', () => {
    expect(isLongRunning({ verb: 'get', isResourceRequest: true, subresource: 'log', path: '' })).toBe(true);
  });
});

describe('paths', () => {
  it('decodes the path like Go URL.Path', () => {
    const i = newRequestInfo('GET', '/api/v1/namespaces/a%20b/pods/c%2Fd', new URLSearchParams());
    expect(i.path).toBe('/api/v1/namespaces/a b/pods/c/d');
    expect([i.namespace, i.resource, i.name, i.subresource]).toEqual(['a b', 'pods', 'c', 'd']);
  });

  it('keeps empty segments and trims outer slashes', () => {
    const i = info('GET', '/api/v1//pods/');
    expect(i.parts).toEqual(['', 'pods']);
    expect([i.resource, i.name, i.verb]).toEqual(['', 'pods', 'get']);
  });

  it('unknown methods give an empty verb', () => {
    expect(info('OPTIONS', '/api/v1/pods').verb).toBe('');
  });
});
