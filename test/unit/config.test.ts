import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig, parseConfig, type Config } from '../../src/config/index.js';
import { createCA, issueServingCert } from '../../src/pki/index.js';

const EXAMPLE = join(import.meta.dirname, '../../config/fleetgate.example.yaml');

/** The smallest valid file: serving cert and key, a client CA (so x509 authenticates) and the control plane. */
const MINIMAL = `
server:
  tls:
    certFile: serving.crt
    keyFile: serving.key
    clientCAFile: /abs/client-ca.crt
controlPlane:
  kubeconfig: cp.kubeconfig
`;

function errorsOf(yaml: string, source = '/etc/fleetgate/config.yaml', checkFiles = false): string[] {
  try {
    parseConfig(yaml, source, { checkFiles });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).errors;
  }
  throw new Error('expected the configuration to be rejected');
}

function parse(yaml: string, source = '/etc/fleetgate/config.yaml'): Config {
  return parseConfig(yaml, source, { checkFiles: false });
}

describe('config defaults', () => {
  it('fills every option and resolves paths against the file directory', () => {
    expect(parse(MINIMAL)).toEqual({
      server: {
        address: '0.0.0.0',
        port: 6443,
        tls: { certFile: '/etc/fleetgate/serving.crt', keyFile: '/etc/fleetgate/serving.key', clientCAFile: '/abs/client-ca.crt', minVersion: 'TLSv1.2' },
        maxRequestBodyBytes: 3145728,
        requestTimeoutSeconds: 60,
        shutdownGracePeriodSeconds: 30,
        http2MaxStreamsPerConnection: 1000,
      },
      controlPlane: { kubeconfig: '/etc/fleetgate/cp.kubeconfig', context: '', timeoutSeconds: 30 },
      authentication: { anonymous: { enabled: false }, x509: { enabled: true }, oidc: [] },
      resources: {
        exposed: [
          { group: '', resources: ['pods', 'events'] },
          { group: 'events.k8s.io', resources: ['events'] },
        ],
      },
      cache: { mode: 'all', members: [], karmada: { enabled: true }, qps: 40, burst: 60, windowSize: 100_000, dropManagedFields: true, intakeWorkers: 0, heapGrowingPercent: 50, touchAheadBytes: 128 * 1024 * 1024 },
      audit: { policyFile: '', failOpen: false },
      flowControl: { enabled: true, configDir: '', maxRequestsInflight: 400, maxMutatingRequestsInflight: 200 },
      authorization: { cachedReads: { mode: 'controlPlane', cacheSize: 10_000, allowedTTLSeconds: 300, deniedTTLSeconds: 30 } },
      admission: { breakGlassGroups: [], deletionProtection: { enabled: true }, scaleDown: { enabled: true, maxReductionPercent: 50, allowScaleToZero: false, resources: [] } },
      logging: { level: 'info' },
      metrics: {},
    } satisfies Config);
  });

  it('expands a leading ~/ to the home directory', () => {
    expect(parse(MINIMAL.replace('cp.kubeconfig', '~/.kube/config')).controlPlane.kubeconfig).toBe(join(homedir(), '.kube/config'));
  });

  it('accepts empty sections written as a bare key', () => {
    const c = parse(`${MINIMAL}cache:\nmetrics:\nlogging:\nresources:\nauthentication:\n`);
    expect(c.cache.mode).toBe('all');
    expect(c.cache.members).toEqual([]);
    expect(c.logging.level).toBe('info');
    expect(c.authentication.x509.enabled).toBe(true);
  });

  it('takes explicit values', () => {
    const c = parse(`
server:
  address: "::"
  port: 0
  tls: { certFile: /c, keyFile: /k, minVersion: TLSv1.3 }
  maxRequestBodyBytes: 1024
  requestTimeoutSeconds: 5
  shutdownGracePeriodSeconds: 0
  http2MaxStreamsPerConnection: 250
controlPlane: { kubeconfig: /kc, context: fed, timeoutSeconds: 7 }
authentication: { anonymous: { enabled: true }, tokenFile: tokens.csv }
logging: { level: debug }
`);
    expect(c.server).toEqual({
      address: '::',
      port: 0,
      tls: { certFile: '/c', keyFile: '/k', minVersion: 'TLSv1.3' },
      maxRequestBodyBytes: 1024,
      requestTimeoutSeconds: 5,
      shutdownGracePeriodSeconds: 0,
      http2MaxStreamsPerConnection: 250,
    });
    expect(c.controlPlane).toEqual({ kubeconfig: '/kc', context: 'fed', timeoutSeconds: 7 });
    expect(c.authentication).toEqual({ anonymous: { enabled: true }, x509: { enabled: false }, oidc: [], tokenFile: '/etc/fleetgate/tokens.csv' });
    expect(c.logging.level).toBe('debug');
  });
});

describe('config validation messages', () => {
  it('names the field, the value and what is allowed', () => {
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  port: abc'))).toEqual(['config: server.port: "abc" is not a port number (1-65535, or 0 for any free port)']);
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  port: 70000'))).toEqual(['config: server.port: 70000 is not a port number (1-65535, or 0 for any free port)']);
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  port: "6443"'))).toEqual([
      'config: server.port: "6443" is not a port number (1-65535, or 0 for any free port); write numbers without quotes',
    ]);
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  address: "not an address"'))).toEqual([
      'config: server.address: "not an address" is not an IP address or host name to listen on',
    ]);
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  requestTimeoutSeconds: 0'))).toEqual([
      'config: server.requestTimeoutSeconds: 0 is not a whole number of seconds (1-86400)',
    ]);
    expect(errorsOf(MINIMAL.replace('server:', 'server:\n  maxRequestBodyBytes: 1.5'))).toEqual([
      'config: server.maxRequestBodyBytes: 1.5 is not a positive whole number of bytes',
    ]);
    expect(errorsOf(MINIMAL.replace('    keyFile', '    minVersion: TLSv1.1\n    keyFile'))).toEqual([
      'config: server.tls.minVersion: "TLSv1.1" is not one of TLSv1.2, TLSv1.3',
    ]);
    expect(errorsOf(`${MINIMAL}logging: { level: loud }`)).toEqual(['config: logging.level: "loud" is not one of fatal, error, warn, info, debug, trace, silent']);
    expect(errorsOf(`${MINIMAL}authentication: { anonymous: { enabled: yes } }`)).toEqual([
      'config: authentication.anonymous.enabled: "yes" is not a boolean (true or false)',
    ]);
  });

  it('reports every problem at once', () => {
    const errors = errorsOf(`
server:
  port: abc
  prot: 1
  tls: { certFile: "" }
controlPlane: { context: 3 }
logging: { level: loud }
extra: true
`);
    expect(errors).toEqual([
      'config: extra: unknown field; allowed: server, controlPlane, authentication, resources, cache, audit, flowControl, authorization, admission, logging, metrics',
      'config: server.prot: unknown field; did you mean "port"? allowed: address, port, tls, maxRequestBodyBytes, requestTimeoutSeconds, shutdownGracePeriodSeconds, http2MaxStreamsPerConnection',
      'config: server.tls.certFile: "" is not a file path',
      'config: server.tls.keyFile: missing; a path to the serving private key (PEM) is required',
      'config: server.port: "abc" is not a port number (1-65535, or 0 for any free port)',
      'config: controlPlane.kubeconfig: missing; a path to the kubeconfig of the federation control plane is required',
      'config: controlPlane.context: 3 is not a string',
      'config: authentication: no way to authenticate is configured; set server.tls.clientCAFile (x509), oidc, tokenFile or anonymous.enabled',
      'config: logging.level: "loud" is not one of fatal, error, warn, info, debug, trace, silent',
    ]);
  });

  it('rejects unknown fields in the sections that take none yet', () => {
    expect(errorsOf(`${MINIMAL}metrics: { path: /m }`)).toEqual(['config: metrics.path: unknown field; this section takes no fields yet']);
    expect(errorsOf(`${MINIMAL}cache: [1]`)).toEqual(['config: cache: a list is not a mapping (fields: mode, members, karmada, qps, burst, windowSize, dropManagedFields, intakeWorkers, heapGrowingPercent, touchAheadBytes, facade)']);
  });

  it('takes cache.intakeWorkers from 0 (the main thread parses, the default) up', () => {
    expect(parse(`${MINIMAL}cache:\n  intakeWorkers: 0\n`).cache.intakeWorkers).toBe(0);
    expect(parse(`${MINIMAL}cache:\n  intakeWorkers: 3\n`).cache.intakeWorkers).toBe(3);
    expect(errorsOf(`${MINIMAL}cache:\n  intakeWorkers: -1\n`)).toEqual(['config: cache.intakeWorkers: -1 is not a whole number of threads (0-64)']);
    expect(parse(MINIMAL).cache.intakeWorkers).toBe(DEFAULTS.intakeWorkers);
    expect(DEFAULTS.intakeWorkers).toBe(0);
  });

  it('takes cache.touchAheadBytes from 0 (off) to 16 GiB, 128 MiB by default', () => {
    expect(parse(MINIMAL).cache.touchAheadBytes).toBe(128 * 1024 * 1024);
    expect(parse(`${MINIMAL}cache:\n  touchAheadBytes: 0\n`).cache.touchAheadBytes).toBe(0);
    expect(parse(`${MINIMAL}cache:\n  touchAheadBytes: 268435456\n`).cache.touchAheadBytes).toBe(268435456);
    expect(errorsOf(`${MINIMAL}cache:\n  touchAheadBytes: -1\n`)).toEqual(['config: cache.touchAheadBytes: -1 is not a whole number of bytes (0-17179869184; 0: off)']);
    expect(errorsOf(`${MINIMAL}cache:\n  touchAheadBytes: 64MiB\n`)).toEqual(['config: cache.touchAheadBytes: "64MiB" is not a whole number of bytes (0-17179869184; 0: off)']);
  });

  it('takes cache.heapGrowingPercent from 0 (V8 chooses) to 400, 50 by default', () => {
    expect(parse(MINIMAL).cache.heapGrowingPercent).toBe(50);
    expect(parse(`${MINIMAL}cache:\n  heapGrowingPercent: 0\n`).cache.heapGrowingPercent).toBe(0);
    expect(parse(`${MINIMAL}cache:\n  heapGrowingPercent: 100\n`).cache.heapGrowingPercent).toBe(100);
    expect(errorsOf(`${MINIMAL}cache:\n  heapGrowingPercent: 1.5\n`)).toEqual(['config: cache.heapGrowingPercent: 1.5 is not a whole number of percent (0-400; 0: V8 chooses)']);
    expect(errorsOf(`${MINIMAL}cache:\n  heapGrowingPercent: 500\n`)).toEqual(['config: cache.heapGrowingPercent: 500 is not a whole number of percent (0-400; 0: V8 chooses)']);
  });

  it('checks the cache section', () => {
    expect(
      errorsOf(`${MINIMAL}cache:\n  mode: fast\n  qps: 0\n  members:\n    - name: Member_A\n      kubeconfig: /k\n    - {kubeconfig: /k}\n`),
    ).toEqual([
      'config: cache.mode: "fast" is not one of all, cache, facade',
      'config: cache.members[0].name: "Member_A" is not a member name (a DNS label: lower-case letters, digits and \'-\', at most 63)',
      "config: cache.members[1].name: missing; the member cluster's name (a DNS label) is required",
      'config: cache.qps: 0 is not a whole number of requests per second (1-100000)',
    ]);
    expect(errorsOf(`${MINIMAL}cache: { mode: facade }`)).toEqual(['config: cache.facade: missing; mode facade needs facade.kubeconfig (how to reach the cache service)']);
  });

  it('requires the serving certificate and the control plane', () => {
    expect(errorsOf('')).toEqual([
      'config: server.tls: missing; a mapping with certFile and keyFile (the serving certificate and key, PEM) is required',
      'config: controlPlane.kubeconfig: missing; a path to the kubeconfig of the federation control plane is required',
      'config: authentication: no way to authenticate is configured; set server.tls.clientCAFile (x509), oidc, tokenFile or anonymous.enabled',
    ]);
  });

  it('reports YAML syntax errors with the file and position', () => {
    expect(errorsOf('server:\n  port: 1\n  port: 2\n', '/x/c.yaml')).toEqual(['config: /x/c.yaml: Map keys must be unique at line 3, column 3']);
    const [bad] = errorsOf('server: [1,\n', '/x/c.yaml');
    expect(bad).toMatch(/^config: \/x\/c\.yaml: .* at line \d+, column \d+$/);
    expect(errorsOf('- a\n- b\n', '/x/c.yaml')).toEqual([
      'config: /x/c.yaml: a list is not a mapping; the file must be a YAML mapping with the sections server, controlPlane, authentication, resources, cache, audit, flowControl, authorization, admission, logging, metrics',
    ]);
  });
});

describe('config authentication', () => {
  const noCA = MINIMAL.replace('    clientCAFile: /abs/client-ca.crt\n', '');

  it('turns x509 on exactly when there is a client CA', () => {
    expect(parse(MINIMAL).authentication.x509.enabled).toBe(true);
    expect(parse(`${MINIMAL}authentication: { x509: { enabled: false }, tokenFile: t.csv }`).authentication.x509.enabled).toBe(false);
    expect(errorsOf(`${MINIMAL}authentication: { x509: { enabled: false } }`)).toEqual([
      'config: authentication: no way to authenticate is configured; set server.tls.clientCAFile (x509), oidc, tokenFile or anonymous.enabled',
    ]);
    expect(parse(`${noCA}authentication: { anonymous: { enabled: true } }`).authentication.x509.enabled).toBe(false);
    expect(errorsOf(`${noCA}authentication: { x509: { enabled: true } }`)).toEqual([
      'config: authentication.x509.enabled: true needs server.tls.clientCAFile (the CA that signs client certificates)',
    ]);
  });

  it('fills OIDC defaults and keeps the username prefix as written', () => {
    const c = parse(`${MINIMAL}
authentication:
  oidc:
    - { issuer: "https://a.example", audiences: [fleetgate] }
    - { issuer: "https://b.example/realms/x", audiences: [fleetgate, kubectl], usernameClaim: email, jwksFile: keys.json, caFile: ca.pem }
    - { issuer: "https://c.example", audiences: [x], usernamePrefix: "-", groupsClaim: "", groupsPrefix: "oidc:", requiredClaims: { hd: example.com } }
    - { issuer: "https://d.example", audiences: [x], usernameClaim: email, usernamePrefix: "d:" }
`);
    expect(c.authentication.oidc).toEqual([
      { issuer: 'https://a.example', audiences: ['fleetgate'], usernameClaim: 'sub', usernamePrefix: '', groupsClaim: 'groups', groupsPrefix: '', requiredClaims: {} },
      {
        issuer: 'https://b.example/realms/x',
        audiences: ['fleetgate', 'kubectl'],
        jwksFile: '/etc/fleetgate/keys.json',
        caFile: '/etc/fleetgate/ca.pem',
        usernameClaim: 'email',
        usernamePrefix: '',
        groupsClaim: 'groups',
        groupsPrefix: '',
        requiredClaims: {},
      },
      { issuer: 'https://c.example', audiences: ['x'], usernameClaim: 'sub', usernamePrefix: '-', groupsClaim: '', groupsPrefix: 'oidc:', requiredClaims: { hd: 'example.com' } },
      { issuer: 'https://d.example', audiences: ['x'], usernameClaim: 'email', usernamePrefix: 'd:', groupsClaim: 'groups', groupsPrefix: '', requiredClaims: {} },
    ]);
  });

  it('validates issuers and audiences as kube-apiserver does', () => {
    expect(
      errorsOf(`${MINIMAL}
authentication:
  oidc:
    - { issuer: "http://a.example", audiences: [x] }
    - { issuer: "https://a.example?x=1", audiences: [x] }
    - { issuer: "https://a.example#f", audiences: [x] }
    - { issuer: "https://u:p@a.example", audiences: [x] }
    - { issuer: "https://ok.example", audiences: [] }
    - { issuer: "https://ok.example", audiences: [x, x] }
    - { audiences: [x], requiredClaims: { n: 1 }, usernameClaim: "" }
    - "https://a.example"
`),
    ).toEqual([
      'config: authentication.oidc[0].issuer: "http://a.example" is not a valid issuer URL: the URL scheme must be https',
      'config: authentication.oidc[1].issuer: "https://a.example?x=1" is not a valid issuer URL: it must not contain a query',
      'config: authentication.oidc[2].issuer: "https://a.example#f" is not a valid issuer URL: it must not contain a fragment',
      'config: authentication.oidc[3].issuer: "https://u:p@a.example" is not a valid issuer URL: it must not contain a username or password',
      'config: authentication.oidc[4].audiences: is an empty list; at least one entry is required',
      'config: authentication.oidc[5].issuer: "https://ok.example" is already the issuer of authentication.oidc[4]; each issuer may appear once',
      'config: authentication.oidc[5].audiences[1]: "x" is listed twice',
      'config: authentication.oidc[6].issuer: missing; the issuer URL (https, as in the tokens\' iss claim) is required',
      'config: authentication.oidc[6].usernameClaim: "" is not a non-empty string',
      'config: authentication.oidc[6].requiredClaims.n: 1 is not a string; quote it',
      'config: authentication.oidc[7]: "https://a.example" is not a mapping (fields: issuer, audiences, jwksFile, caFile, usernameClaim, usernamePrefix, groupsClaim, groupsPrefix, requiredClaims)',
    ]);
  });
});

describe('config resources', () => {
  it('always exposes pods and events, merged into the allowlist', () => {
    const c = parse(`${MINIMAL}
resources:
  exposed:
    - { group: apps, resources: [deployments] }
    - { group: "", resources: [configmaps, pods] }
`);
    expect(c.resources.exposed).toEqual([
      { group: 'apps', resources: ['deployments'] },
      { group: '', resources: ['configmaps', 'pods', 'events'] },
      { group: 'events.k8s.io', resources: ['events'] },
    ]);
  });

  it('adds nothing when a wildcard already covers them', () => {
    expect(parse(`${MINIMAL}resources: { exposed: [ { group: "*", resources: ["*"] } ] }`).resources.exposed).toEqual([{ group: '*', resources: ['*'] }]);
    expect(parse(`${MINIMAL}resources: { exposed: [ { group: "", resources: ["*"] } ] }`).resources.exposed).toEqual([
      { group: '', resources: ['*'] },
      { group: 'events.k8s.io', resources: ['events'] },
    ]);
  });

  it('rejects bad groups, names and repeated groups', () => {
    expect(
      errorsOf(`${MINIMAL}
resources:
  exposed:
    - { group: Apps, resources: [deployments] }
    - { group: apps, resources: [Deployments, deployments/scale] }
    - { resources: [x] }
    - { group: batch, resources: [] }
    - { group: apps, resources: [replicasets] }
    - { group: apps, resources: [statefulsets] }
`),
    ).toEqual([
      'config: resources.exposed[0].group: "Apps" is not an API group (a DNS subdomain such as apps or batch, "" for the core group, "*" for every group)',
      'config: resources.exposed[1].resources[0]: "Deployments" is not a resource name (plural and lower case, such as deployments, or "*")',
      'config: resources.exposed[1].resources[1]: "deployments/scale" is not a resource name (plural and lower case, such as deployments, or "*"); subresources follow their resource',
      'config: resources.exposed[2].group: missing; the API group ("" for the core group, "*" for every group) is required',
      'config: resources.exposed[3].resources: is an empty list; at least one entry is required',
      'config: resources.exposed[5].group: "apps" is already listed at resources.exposed[4]; list each group once',
    ]);
  });
});

describe('config files', () => {
  let dir: string;
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
  const kubeconfig = (current: string) => `apiVersion: v1
kind: Config
clusters: [ { name: fed, cluster: { server: "https://127.0.0.1:6444" } } ]
users: [ { name: admin, user: { token: t } } ]
contexts: [ { name: fed, context: { cluster: fed, user: admin } }, { name: broken, context: { cluster: nowhere, user: admin } } ]
current-context: "${current}"
`;
  const config = (extra = '') => `server:
  tls: { certFile: serving.crt, keyFile: serving.key, clientCAFile: client-ca.crt }
controlPlane: { kubeconfig: cp.kubeconfig }
${extra}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-config-'));
    const ca = await createCA('test-ca');
    const serving = await issueServingCert(ca, ['localhost']);
    const other = await issueServingCert(ca, ['elsewhere']);
    write('ca.crt', ca.certPem);
    write('serving.crt', serving.certPem);
    write('serving.key', serving.keyPem);
    write('other.key', other.keyPem);
    write('client-ca.crt', ca.certPem + ca.certPem);
    write('cp.kubeconfig', kubeconfig('fed'));
    write('nocurrent.kubeconfig', kubeconfig(''));
    write('jwks.json', JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }] }));
    write('empty-jwks.json', JSON.stringify({ keys: [] }));
    write('tokens.csv', 't,alice,1\n');
    write('fleetgate.yaml', config());
  });

  it('loads a configuration whose files exist and fit together', () => {
    const c = loadConfig(join(dir, 'fleetgate.yaml'));
    expect(c.server.tls.certFile).toBe(join(dir, 'serving.crt'));
    expect(c.controlPlane.kubeconfig).toBe(join(dir, 'cp.kubeconfig'));
    const more = parseConfig(
      config(`authentication:
  tokenFile: tokens.csv
  oidc: [ { issuer: "https://idp.example", audiences: [fleetgate], jwksFile: jwks.json, caFile: ca.crt } ]`),
      join(dir, 'c.yaml'),
    );
    expect(more.authentication.tokenFile).toBe(join(dir, 'tokens.csv'));
    expect(more.authentication.oidc[0]!.jwksFile).toBe(join(dir, 'jwks.json'));
  });

  it('reports missing files and files that do not hold what they should', () => {
    const src = join(dir, 'c.yaml');
    const errors = errorsOf(
      `server:
  tls: { certFile: serving.key, keyFile: nope.key, clientCAFile: tokens.csv }
controlPlane: { kubeconfig: ${dir} }
authentication:
  tokenFile: missing.csv
  oidc: [ { issuer: "https://idp.example", audiences: [x], jwksFile: empty-jwks.json } ]
`,
      src,
      true,
    );
    expect(errors).toEqual([
      `config: server.tls.certFile: "${join(dir, 'serving.key')}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      `config: server.tls.keyFile: "${join(dir, 'nope.key')}" cannot be read: no such file`,
      `config: server.tls.clientCAFile: "${join(dir, 'tokens.csv')}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      `config: controlPlane.kubeconfig: "${dir}" cannot be read: it is a directory`,
      `config: authentication.oidc[0].jwksFile: "${join(dir, 'empty-jwks.json')}" is not a JSON Web Key Set ({"keys": [...]} with at least one key)`,
      `config: authentication.tokenFile: "${join(dir, 'missing.csv')}" cannot be read: no such file`,
    ]);
  });

  it('refuses a serving key that belongs to another certificate', () => {
    expect(errorsOf(config().replace('keyFile: serving.key', 'keyFile: other.key'), join(dir, 'c.yaml'), true)).toEqual([
      `config: server.tls.keyFile: "${join(dir, 'other.key')}" is not the private key of the certificate in "${join(dir, 'serving.crt')}" (server.tls.certFile)`,
    ]);
  });

  it('checks that the control plane context exists', () => {
    const src = join(dir, 'c.yaml');
    expect(errorsOf(config().replace('cp.kubeconfig }', 'cp.kubeconfig, context: prod }'), src, true)).toEqual([
      `config: controlPlane.context: "prod" is not a context in "${join(dir, 'cp.kubeconfig')}" (contexts: fed, broken)`,
    ]);
    expect(errorsOf(config().replace('cp.kubeconfig }', 'nocurrent.kubeconfig }'), src, true)).toEqual([
      `config: controlPlane.context: "" and "${join(dir, 'nocurrent.kubeconfig')}" has no current-context; name one of its contexts: fed, broken`,
    ]);
    expect(errorsOf(config().replace('cp.kubeconfig }', 'cp.kubeconfig, context: broken }'), src, true)).toEqual([
      `config: controlPlane.kubeconfig: context "broken" in "${join(dir, 'cp.kubeconfig')}" names cluster "nowhere", which has no server there`,
    ]);
    expect(parseConfig(config().replace('cp.kubeconfig }', 'nocurrent.kubeconfig, context: fed }'), src).controlPlane.context).toBe('fed');
  });

  it('says when the configuration file itself cannot be read', () => {
    expect(() => loadConfig(join(dir, 'absent.yaml'))).toThrow(`config: ${join(dir, 'absent.yaml')}: cannot be read: no such file`);
  });
});

describe('config/fleetgate.example.yaml', () => {
  const text = readFileSync(EXAMPLE, 'utf8');

  it('is a valid configuration', () => {
    const c = parseConfig(text, EXAMPLE, { checkFiles: false });
    expect(c.server.port).toBe(6443);
    expect(c.authentication.x509.enabled).toBe(true);
  });

  it('documents every field the parser accepts', () => {
    // The parser lists a section's fields when it meets an unknown one; every one listed must appear in the example.
    const probe = `
zzz: 1
server: { zzz: 1, tls: { zzz: 1 } }
controlPlane: { zzz: 1 }
authentication: { zzz: 1, anonymous: { zzz: 1 }, x509: { zzz: 1 }, oidc: [ { zzz: 1 } ] }
resources: { zzz: 1, exposed: [ { zzz: 1 } ] }
cache: { zzz: 1, members: [ { zzz: 1 } ], karmada: { zzz: 1 }, facade: { zzz: 1 } }
audit: { zzz: 1, log: { zzz: 1 }, webhook: { zzz: 1 } }
flowControl: { zzz: 1 }
authorization: { zzz: 1, cachedReads: { zzz: 1 } }
admission: { zzz: 1, deletionProtection: { zzz: 1 }, scaleDown: { zzz: 1, resources: [ { zzz: 1 } ] } }
logging: { zzz: 1 }
`;
    const fields = new Set<string>();
    for (const e of errorsOf(probe)) {
      const m = /unknown field; allowed: (.*)$/.exec(e);
      if (m) m[1]!.split(', ').forEach((f) => fields.add(f));
    }
    expect(fields.size).toBeGreaterThan(30);
    const undocumented = [...fields].filter((f) => !new RegExp(`\\b${f}:`).test(text));
    expect(undocumented).toEqual([]);
  });
});
