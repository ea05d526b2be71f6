// Reading the gateway's YAML configuration into a fully defaulted Config. Every problem in the file is collected
// and reported at once, one line each: `config: <field path>: <value> is not <what is allowed>`.

import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import {
  bool,
  child,
  filePath,
  int,
  item,
  mapping,
  oneOf,
  opt,
  problem,
  req,
  show,
  stringList,
  stringMap,
  text,
  type Reader,
  type Walk,
} from './fields.js';
import { checkCertificates, checkJWKS, checkKubeconfig, checkRevocationList, checkServingKeyPair, readText } from './files.js';
import {
  ALWAYS_EXPOSED,
  CACHE_MODES,
  DEFAULTS,
  LOG_LEVELS,
  TLS_VERSIONS,
  type AuthenticationConfig,
  type AdmissionConfig,
  type AuditConfig,
  type AuthorizationConfig,
  type CacheConfig,
  type CacheMode,
  type FlowControlConfig,
  type ScaleDownResourceConfig,
  type StaticMemberConfig,
  type Config,
  type ControlPlaneConfig,
  type ExposedResources,
  type OIDCIssuerConfig,
  type ServerConfig,
} from './types.js';

export class ConfigError extends Error {
  constructor(
    /** The file (or name) the configuration came from. */
    readonly source: string,
    /** One line per problem, section by section; a section's unknown fields come first. */
    readonly errors: string[],
  ) {
    super(errors.join('\n'));
    this.name = 'ConfigError';
  }
}

export interface ParseOptions {
  /**
   * Read the files the configuration names (certificates, keys, kubeconfig, JWKS, token file) and report those
   * that are missing, unreadable or do not fit together. Default true; false checks the YAML alone.
   */
  checkFiles?: boolean;
}

const TOP = ['server', 'controlPlane', 'authentication', 'resources', 'cache', 'audit', 'flowControl', 'authorization', 'admission', 'logging', 'metrics'] as const;
const SECONDS = (min: number) => int(min, 86_400, `a whole number of seconds (${min}-86400)`);

export function loadConfig(path: string, opts: ParseOptions = {}): Config {
  const abs = resolve(path);
  let source: string;
  try {
    source = readFileSync(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    throw new ConfigError(abs, [`config: ${abs}: cannot be read: ${why}`]);
  }
  return parseConfig(source, abs, opts);
}

/** source is the path the text came from: relative paths inside resolve against its directory. */
export function parseConfig(yamlText: string, source: string, opts: ParseOptions = {}): Config {
  const doc = parseDocument(yamlText, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(source, doc.errors.map((e) => `config: ${source}: ${e.message.split('\n')[0]!.replace(/:$/, '')}`));
  }
  let root: unknown;
  try {
    root = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new ConfigError(source, [`config: ${source}: ${(err as Error).message}`]);
  }
  const w: Walk = { errors: [], baseDir: dirname(resolve(source)) };
  const files = opts.checkFiles !== false;
  if (root !== null && root !== undefined && (typeof root !== 'object' || Array.isArray(root))) {
    throw new ConfigError(source, [`config: ${source}: ${show(root)} is not a mapping; the file must be a YAML mapping with the sections ${TOP.join(', ')}`]);
  }
  const top = mapping(w, '', root, TOP)!;

  const server = readServer(w, top['server'], files);
  const controlPlane = readControlPlane(w, top['controlPlane'], files);
  const authentication = readAuthentication(w, top['authentication'], server.tls.clientCAFile, files);
  const resources = { exposed: readExposed(w, top['resources']) };
  const cache = readCache(w, top['cache'], files);
  const audit = readAudit(w, top['audit'], files);
  const flowControl = readFlowControl(w, top['flowControl']);
  const authorization = readAuthorization(w, top['authorization']);
  const admission = readAdmission(w, top['admission']);
  mapping(w, 'metrics', top['metrics'], []);
  const logging = mapping(w, 'logging', top['logging'], ['level']) ?? {};
  const level = opt(w, logging, 'logging', 'level', oneOf(LOG_LEVELS), DEFAULTS.logLevel);

  if (w.errors.length > 0) throw new ConfigError(source, w.errors);
  return { server, controlPlane, authentication, resources, cache, audit, flowControl, authorization, admission, logging: { level }, metrics: {} };
}

function readServer(w: Walk, v: unknown, files: boolean): ServerConfig {
  const path = 'server';
  const s = mapping(w, path, v, ['address', 'port', 'tls', 'maxRequestBodyBytes', 'requestTimeoutSeconds', 'shutdownGracePeriodSeconds', 'http2MaxStreamsPerConnection']) ?? {};
  const tlsPath = child(path, 'tls');
  let t: Record<string, unknown> = {};
  let tlsGiven = false;
  if (s['tls'] === undefined || s['tls'] === null) {
    problem(w, tlsPath, 'missing; a mapping with certFile and keyFile (the serving certificate and key, PEM) is required');
  } else {
    const m = mapping(w, tlsPath, s['tls'], ['certFile', 'keyFile', 'clientCAFile', 'clientCRLFile', 'minVersion']);
    if (m) [t, tlsGiven] = [m, true];
  }
  const certFile = tlsGiven ? req(w, t, tlsPath, 'certFile', filePath, 'a path to the serving certificate (PEM)') : undefined;
  const keyFile = tlsGiven ? req(w, t, tlsPath, 'keyFile', filePath, 'a path to the serving private key (PEM)') : undefined;
  const clientCAFile = opt<string | undefined>(w, t, tlsPath, 'clientCAFile', filePath, undefined);
  if (files && certFile && keyFile) checkServingKeyPair(w, child(tlsPath, 'certFile'), certFile, child(tlsPath, 'keyFile'), keyFile);
  if (files && clientCAFile) checkCertificates(w, child(tlsPath, 'clientCAFile'), clientCAFile);
  const clientCRLFile = opt<string | undefined>(w, t, tlsPath, 'clientCRLFile', filePath, undefined);
  if (clientCRLFile !== undefined && clientCAFile === undefined) {
    problem(w, child(tlsPath, 'clientCRLFile'), 'needs server.tls.clientCAFile (the CA whose certificates the list revokes)');
  }
  // A list that does not exist yet is allowed (nothing is revoked until it appears); one that exists must be a CRL.
  if (files && clientCRLFile && existsSync(clientCRLFile)) checkRevocationList(w, child(tlsPath, 'clientCRLFile'), clientCRLFile);
  return {
    address: opt(w, s, path, 'address', bindAddress, DEFAULTS.address),
    port: opt(w, s, path, 'port', int(0, 65535, 'a port number (1-65535, or 0 for any free port)'), DEFAULTS.port),
    tls: {
      certFile: certFile ?? '',
      keyFile: keyFile ?? '',
      ...(clientCAFile !== undefined ? { clientCAFile } : {}),
      ...(clientCRLFile !== undefined ? { clientCRLFile } : {}),
      minVersion: opt(w, t, tlsPath, 'minVersion', oneOf(TLS_VERSIONS), DEFAULTS.tlsMinVersion),
    },
    maxRequestBodyBytes: opt(w, s, path, 'maxRequestBodyBytes', int(1, Number.MAX_SAFE_INTEGER, 'a positive whole number of bytes'), DEFAULTS.maxRequestBodyBytes),
    requestTimeoutSeconds: opt(w, s, path, 'requestTimeoutSeconds', SECONDS(1), DEFAULTS.requestTimeoutSeconds),
    shutdownGracePeriodSeconds: opt(w, s, path, 'shutdownGracePeriodSeconds', SECONDS(0), DEFAULTS.shutdownGracePeriodSeconds),
    http2MaxStreamsPerConnection: opt(w, s, path, 'http2MaxStreamsPerConnection', int(1, 2 ** 31 - 1, 'a positive whole number of streams'), DEFAULTS.http2MaxStreamsPerConnection),
  };
}

const bindAddress: Reader<string> = (w, path, v) => {
  if (typeof v === 'string' && (isIP(v) !== 0 || isHostName(v))) return v;
  problem(w, path, `${show(v)} is not an IP address or host name to listen on`);
  return undefined;
};

function readCache(w: Walk, v: unknown, files: boolean): CacheConfig {
  const path = 'cache';
  const c = mapping(w, path, v, ['mode', 'members', 'karmada', 'qps', 'burst', 'windowSize', 'dropManagedFields', 'intakeWorkers', 'heapGrowingPercent', 'touchAheadBytes', 'facade']) ?? {};
  const mode = opt(w, c, path, 'mode', oneOf(CACHE_MODES), 'all' as CacheMode);
  const members: StaticMemberConfig[] = [];
  const mPath = child(path, 'members');
  const list = c['members'];
  if (list !== undefined && list !== null && !Array.isArray(list)) problem(w, mPath, `${show(list)} is not a list of members (each a mapping with name and kubeconfig)`);
  else if (Array.isArray(list)) {
    const seen = new Set<string>();
    list.forEach((entry, i) => {
      const p = item(mPath, i);
      const m = mapping(w, p, entry, ['name', 'kubeconfig', 'context']);
      if (!m) return;
      const name = req(w, m, p, 'name', memberName, 'the member cluster\'s name (a DNS label)');
      if (name !== undefined) {
        if (seen.has(name)) problem(w, child(p, 'name'), `${show(name)} is already the name of another member; names must be unique`);
        seen.add(name);
      }
      const kubeconfig = req(w, m, p, 'kubeconfig', filePath, 'a path to a kubeconfig for the member');
      const context = opt(w, m, p, 'context', text({ empty: true }), '');
      if (files && kubeconfig) checkKubeconfig(w, child(p, 'kubeconfig'), kubeconfig, child(p, 'context'), context);
      if (name !== undefined && kubeconfig !== undefined) members.push({ name, kubeconfig, context });
    });
  }
  const karmada = mapping(w, child(path, 'karmada'), c['karmada'], ['enabled']) ?? {};
  let facade: CacheConfig['facade'];
  const fPath = child(path, 'facade');
  if (c['facade'] !== undefined && c['facade'] !== null) {
    const f = mapping(w, fPath, c['facade'], ['kubeconfig', 'context']) ?? {};
    const kubeconfig = req(w, f, fPath, 'kubeconfig', filePath, 'a path to the kubeconfig of the cache service');
    const context = opt(w, f, fPath, 'context', text({ empty: true }), '');
    if (files && kubeconfig) checkKubeconfig(w, child(fPath, 'kubeconfig'), kubeconfig, child(fPath, 'context'), context);
    if (kubeconfig) facade = { kubeconfig, context };
  }
  if (mode === 'facade' && !facade) problem(w, fPath, 'missing; mode facade needs facade.kubeconfig (how to reach the cache service)');
  return {
    mode,
    members,
    karmada: { enabled: opt(w, karmada, child(path, 'karmada'), 'enabled', bool, true) },
    qps: opt(w, c, path, 'qps', int(1, 100_000, 'a whole number of requests per second (1-100000)'), DEFAULTS.memberQPS),
    burst: opt(w, c, path, 'burst', int(1, 100_000, 'a whole number of requests (1-100000)'), DEFAULTS.memberBurst),
    windowSize: opt(w, c, path, 'windowSize', int(100, 10_000_000, 'a whole number of events (100-10000000)'), DEFAULTS.cacheWindowSize),
    dropManagedFields: opt(w, c, path, 'dropManagedFields', bool, true),
    intakeWorkers: opt(w, c, path, 'intakeWorkers', int(0, 64, 'a whole number of threads (0-64)'), DEFAULTS.intakeWorkers),
    heapGrowingPercent: opt(w, c, path, 'heapGrowingPercent', int(0, 400, 'a whole number of percent (0-400; 0: V8 chooses)'), DEFAULTS.heapGrowingPercent),
    touchAheadBytes: opt(w, c, path, 'touchAheadBytes', int(0, 16 * 1024 ** 3, 'a whole number of bytes (0-17179869184; 0: off)'), DEFAULTS.touchAheadBytes),
    ...(facade ? { facade } : {}),
  };
}

function readAudit(w: Walk, v: unknown, files: boolean): AuditConfig {
  const path = 'audit';
  const a = mapping(w, path, v, ['policyFile', 'log', 'webhook', 'failOpen']) ?? {};
  const policyFile = opt(w, a, path, 'policyFile', filePathOrEmpty, '');
  if (files && policyFile) readText(w, child(path, 'policyFile'), policyFile);
  let log: AuditConfig['log'];
  if (a['log'] !== undefined && a['log'] !== null) {
    const p = child(path, 'log');
    const l = mapping(w, p, a['log'], ['path', 'maxSizeBytes', 'maxBackups']) ?? {};
    const file = req(w, l, p, 'path', filePath, 'the path of the audit log file');
    const maxSizeBytes = opt(w, l, p, 'maxSizeBytes', int(0, Number.MAX_SAFE_INTEGER, 'a whole number of bytes (0: never rotate)'), 100 * 1024 * 1024);
    const maxBackups = opt(w, l, p, 'maxBackups', int(0, 100_000, 'a whole number of files (0: keep all)'), 10);
    if (file) log = { path: file, maxSizeBytes, maxBackups };
  }
  let webhook: AuditConfig['webhook'];
  if (a['webhook'] !== undefined && a['webhook'] !== null) {
    const p = child(path, 'webhook');
    const h = mapping(w, p, a['webhook'], ['kubeconfig', 'context', 'mode', 'bufferSize', 'maxBatchSize', 'maxBatchWaitMs']) ?? {};
    const kubeconfig = req(w, h, p, 'kubeconfig', filePath, 'a path to a kubeconfig for the audit webhook');
    const context = opt(w, h, p, 'context', text({ empty: true }), '');
    if (files && kubeconfig) checkKubeconfig(w, child(p, 'kubeconfig'), kubeconfig, child(p, 'context'), context);
    const mode = opt<'batch' | 'blocking' | undefined>(w, h, p, 'mode', oneOf(['batch', 'blocking'] as const), undefined);
    const bufferSize = opt(w, h, p, 'bufferSize', int(1, 10_000_000, 'a whole number of events'), 10_000);
    const maxBatchSize = opt(w, h, p, 'maxBatchSize', int(1, 100_000, 'a whole number of events'), 400);
    const maxBatchWaitMs = opt(w, h, p, 'maxBatchWaitMs', int(1, 3_600_000, 'milliseconds'), 30_000);
    if (kubeconfig) webhook = { kubeconfig, context, ...(mode ? { mode } : {}), bufferSize, maxBatchSize, maxBatchWaitMs };
  }
  return { policyFile, ...(log ? { log } : {}), ...(webhook ? { webhook } : {}), failOpen: opt(w, a, path, 'failOpen', bool, false) };
}

const filePathOrEmpty: Reader<string> = (w, path, v) => (v === '' ? '' : filePath(w, path, v));

function readFlowControl(w: Walk, v: unknown): FlowControlConfig {
  const path = 'flowControl';
  const f = mapping(w, path, v, ['enabled', 'configDir', 'maxRequestsInflight', 'maxMutatingRequestsInflight']) ?? {};
  return {
    enabled: opt(w, f, path, 'enabled', bool, true),
    configDir: opt(w, f, path, 'configDir', filePathOrEmpty, ''),
    maxRequestsInflight: opt(w, f, path, 'maxRequestsInflight', int(1, 1_000_000, 'a whole number of requests (at least 1)'), 400),
    maxMutatingRequestsInflight: opt(w, f, path, 'maxMutatingRequestsInflight', int(1, 1_000_000, 'a whole number of requests (at least 1)'), 200),
  };
}

function readAuthorization(w: Walk, v: unknown): AuthorizationConfig {
  const path = 'authorization';
  const a = mapping(w, path, v, ['cachedReads']) ?? {};
  const p = child(path, 'cachedReads');
  const c = mapping(w, p, a['cachedReads'], ['mode', 'cacheSize', 'allowedTTLSeconds', 'deniedTTLSeconds']) ?? {};
  return {
    cachedReads: {
      mode: opt(w, c, p, 'mode', oneOf(['controlPlane', 'perCluster'] as const), 'controlPlane' as const),
      cacheSize: opt(w, c, p, 'cacheSize', int(0, 10_000_000, 'a whole number of decisions (0: no cache)'), 10_000),
      allowedTTLSeconds: opt(w, c, p, 'allowedTTLSeconds', int(0, 86_400, 'seconds (0-86400)'), 300),
      deniedTTLSeconds: opt(w, c, p, 'deniedTTLSeconds', int(0, 86_400, 'seconds (0-86400)'), 30),
    },
  };
}

function readAdmission(w: Walk, v: unknown): AdmissionConfig {
  const path = 'admission';
  const a = mapping(w, path, v, ['breakGlassGroups', 'deletionProtection', 'scaleDown']) ?? {};
  const dp = mapping(w, child(path, 'deletionProtection'), a['deletionProtection'], ['enabled']) ?? {};
  const sp = child(path, 'scaleDown');
  const sd = mapping(w, sp, a['scaleDown'], ['enabled', 'maxReductionPercent', 'allowScaleToZero', 'resources']) ?? {};
  const resources: ScaleDownResourceConfig[] = [];
  const list = sd['resources'];
  const rp = child(sp, 'resources');
  if (list !== undefined && list !== null && !Array.isArray(list)) problem(w, rp, `${show(list)} is not a list of {group, resource, replicasPath}`);
  else if (Array.isArray(list)) {
    list.forEach((entry, i) => {
      const p = item(rp, i);
      const r = mapping(w, p, entry, ['group', 'resource', 'replicasPath', 'maxReductionPercent', 'allowScaleToZero']);
      if (!r) return;
      const group = opt(w, r, p, 'group', text({ empty: true }), '');
      const resource = req(w, r, p, 'resource', text(), 'the plural resource name (e.g. rollouts)');
      const replicasPath = req(w, r, p, 'replicasPath', replicasPathReader, 'the JSON path of the replicas (e.g. .spec.replicas)');
      const pct = opt<number | undefined>(w, r, p, 'maxReductionPercent', int(0, 100, 'a percentage (0-100)'), undefined);
      const zero = opt<boolean | undefined>(w, r, p, 'allowScaleToZero', bool, undefined);
      if (resource && replicasPath) resources.push({ group, resource, replicasPath, ...(pct !== undefined ? { maxReductionPercent: pct } : {}), ...(zero !== undefined ? { allowScaleToZero: zero } : {}) });
    });
  }
  return {
    breakGlassGroups: opt(w, a, path, 'breakGlassGroups', stringList({ allowEmpty: true }), []),
    deletionProtection: { enabled: opt(w, dp, child(path, 'deletionProtection'), 'enabled', bool, true) },
    scaleDown: {
      enabled: opt(w, sd, sp, 'enabled', bool, true),
      maxReductionPercent: opt(w, sd, sp, 'maxReductionPercent', int(0, 100, 'a percentage (0-100)'), 50),
      allowScaleToZero: opt(w, sd, sp, 'allowScaleToZero', bool, false),
      resources,
    },
  };
}

const replicasPathReader: Reader<string> = (w, path, v) => {
  if (typeof v === 'string' && /^(\.[A-Za-z0-9_-]+)+$/.test(v)) return v;
  problem(w, path, `${show(v)} is not a field path like .spec.replicas`);
  return undefined;
};

const memberName: Reader<string> = (w, path, v) => {
  if (typeof v === 'string' && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v) && v.length <= 63) return v;
  problem(w, path, `${show(v)} is not a member name (a DNS label: lower-case letters, digits and '-', at most 63)`);
  return undefined;
};

function readControlPlane(w: Walk, v: unknown, files: boolean): ControlPlaneConfig {
  const path = 'controlPlane';
  const c = mapping(w, path, v, ['kubeconfig', 'context', 'timeoutSeconds']) ?? {};
  const kubeconfig = req(w, c, path, 'kubeconfig', filePath, 'a path to the kubeconfig of the federation control plane');
  const context = opt(w, c, path, 'context', text({ empty: true }), '');
  if (files && kubeconfig) checkKubeconfig(w, child(path, 'kubeconfig'), kubeconfig, child(path, 'context'), context);
  return { kubeconfig: kubeconfig ?? '', context, timeoutSeconds: opt(w, c, path, 'timeoutSeconds', SECONDS(1), DEFAULTS.controlPlaneTimeoutSeconds) };
}

function readAuthentication(w: Walk, v: unknown, clientCAFile: string | undefined, files: boolean): AuthenticationConfig {
  const path = 'authentication';
  const a = mapping(w, path, v, ['anonymous', 'x509', 'oidc', 'tokenFile']) ?? {};
  const anonymous = mapping(w, child(path, 'anonymous'), a['anonymous'], ['enabled']) ?? {};
  const x509 = mapping(w, child(path, 'x509'), a['x509'], ['enabled']) ?? {};
  const anonymousEnabled = opt(w, anonymous, child(path, 'anonymous'), 'enabled', bool, false);
  const x509Wanted = opt<boolean | undefined>(w, x509, child(path, 'x509'), 'enabled', bool, undefined);
  // On unless turned off, but only where there is a CA to verify against: an explicit true without one is a mistake.
  if (x509Wanted === true && clientCAFile === undefined) {
    problem(w, child(child(path, 'x509'), 'enabled'), 'true needs server.tls.clientCAFile (the CA that signs client certificates)');
  }
  const x509Enabled = x509Wanted !== false && clientCAFile !== undefined;
  const oidc = readOIDC(w, child(path, 'oidc'), a['oidc'], files);
  const tokenFile = opt<string | undefined>(w, a, path, 'tokenFile', filePath, undefined);
  if (files && tokenFile) readText(w, child(path, 'tokenFile'), tokenFile);
  const configured = anonymousEnabled || x509Wanted === true || x509Enabled || (a['oidc'] ?? null) !== null || a['tokenFile'] !== undefined;
  if (!configured) {
    problem(w, path, 'no way to authenticate is configured; set server.tls.clientCAFile (x509), oidc, tokenFile or anonymous.enabled');
  }
  return { anonymous: { enabled: anonymousEnabled }, x509: { enabled: x509Enabled }, oidc, ...(tokenFile !== undefined ? { tokenFile } : {}) };
}

const OIDC_FIELDS = ['issuer', 'audiences', 'jwksFile', 'caFile', 'usernameClaim', 'usernamePrefix', 'groupsClaim', 'groupsPrefix', 'requiredClaims'];

function readOIDC(w: Walk, path: string, v: unknown, files: boolean): OIDCIssuerConfig[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    problem(w, path, `${show(v)} is not a list of issuers (each a mapping with issuer and audiences)`);
    return [];
  }
  const out: OIDCIssuerConfig[] = [];
  const seen = new Map<string, string>();
  v.forEach((entry, i) => {
    const p = item(path, i);
    const o = mapping(w, p, entry, OIDC_FIELDS);
    if (!o) return;
    const issuer = req(w, o, p, 'issuer', issuerURL, 'the issuer URL (https, as in the tokens\' iss claim)');
    if (issuer !== undefined) {
      const first = seen.get(issuer);
      if (first) problem(w, child(p, 'issuer'), `${show(issuer)} is already the issuer of ${first}; each issuer may appear once`);
      else seen.set(issuer, p);
    }
    const audiences = req(w, o, p, 'audiences', stringList(), 'a list of at least one audience (the tokens\' aud)');
    const jwksFile = opt<string | undefined>(w, o, p, 'jwksFile', filePath, undefined);
    const caFile = opt<string | undefined>(w, o, p, 'caFile', filePath, undefined);
    if (files && jwksFile) checkJWKS(w, child(p, 'jwksFile'), jwksFile);
    if (files && caFile) checkCertificates(w, child(p, 'caFile'), caFile);
    const usernameClaim = opt(w, o, p, 'usernameClaim', text(), DEFAULTS.usernameClaim);
    const usernamePrefix = opt(w, o, p, 'usernamePrefix', text({ empty: true }), '');
    const groupsClaim = opt(w, o, p, 'groupsClaim', text({ empty: true }), DEFAULTS.groupsClaim);
    const groupsPrefix = opt(w, o, p, 'groupsPrefix', text({ empty: true }), '');
    const requiredClaims = opt(w, o, p, 'requiredClaims', stringMap, {});
    if (issuer === undefined || audiences === undefined) return;
    out.push({
      issuer,
      audiences,
      ...(jwksFile !== undefined ? { jwksFile } : {}),
      ...(caFile !== undefined ? { caFile } : {}),
      usernameClaim,
      usernamePrefix,
      groupsClaim,
      groupsPrefix,
      requiredClaims,
    });
  });
  return out;
}

const issuerURL: Reader<string> = (w, path, v) => {
  if (typeof v !== 'string' || v === '') {
    problem(w, path, `${show(v)} is not an issuer URL (https://...)`);
    return undefined;
  }
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    problem(w, path, `${show(v)} is not an issuer URL (https://...)`);
    return undefined;
  }
  // The same rules kube-apiserver applies to jwt[].issuer.url.
  const wrong =
    u.protocol !== 'https:' ? 'the URL scheme must be https'
    : u.search !== '' || v.includes('?') ? 'it must not contain a query'
    : u.hash !== '' || v.includes('#') ? 'it must not contain a fragment'
    : u.username !== '' || u.password !== '' ? 'it must not contain a username or password'
    : undefined;
  if (wrong) {
    problem(w, path, `${show(v)} is not a valid issuer URL: ${wrong}`);
    return undefined;
  }
  // Kept as written: it is compared byte for byte with the tokens' iss claim.
  return v;
};

function readExposed(w: Walk, v: unknown): ExposedResources[] {
  const r = mapping(w, 'resources', v, ['exposed']) ?? {};
  const path = 'resources.exposed';
  const list = r['exposed'];
  const out: ExposedResources[] = [];
  if (list !== undefined && list !== null && !Array.isArray(list)) {
    problem(w, path, `${show(list)} is not a list of {group, resources} entries`);
  } else if (Array.isArray(list)) {
    const seen = new Map<string, string>();
    list.forEach((entry, i) => {
      const p = item(path, i);
      const e = mapping(w, p, entry, ['group', 'resources']);
      if (!e) return;
      const group = req(w, e, p, 'group', apiGroup, 'the API group ("" for the core group, "*" for every group)');
      const resources = req(w, e, p, 'resources', stringList({ each: resourceName }), 'a list of resource names (plural, lower case, or "*")');
      if (group === undefined || resources === undefined) return;
      const first = seen.get(group);
      if (first !== undefined) {
        problem(w, child(p, 'group'), `${show(group)} is already listed at ${first}; list each group once`);
        return;
      }
      seen.set(group, p);
      out.push({ group, resources });
    });
  }
  for (const always of ALWAYS_EXPOSED) {
    for (const res of always.resources) {
      if (out.some((e) => (e.group === always.group || e.group === '*') && (e.resources.includes(res) || e.resources.includes('*')))) continue;
      const same = out.find((e) => e.group === always.group);
      if (same) same.resources = [...same.resources, res];
      else out.push({ group: always.group, resources: [res] });
    }
  }
  return out;
}

const apiGroup: Reader<string> = (w, path, v) => {
  if (typeof v === 'string' && (v === '' || v === '*' || isDNSSubdomain(v))) return v;
  problem(w, path, `${show(v)} is not an API group (a DNS subdomain such as apps or batch, "" for the core group, "*" for every group)`);
  return undefined;
};

const resourceName: Reader<string> = (w, path, v) => {
  if (typeof v === 'string' && (v === '*' || /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v))) return v;
  const sub = typeof v === 'string' && v.includes('/') ? '; subresources follow their resource' : '';
  problem(w, path, `${show(v)} is not a resource name (plural and lower case, such as deployments, or "*")${sub}`);
  return undefined;
};

function isDNSSubdomain(s: string): boolean {
  return s.length <= 253 && s.split('.').every((l) => /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(l));
}

function isHostName(s: string): boolean {
  return s.length <= 253 && s.split('.').every((l) => /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/.test(l));
}
