// The gateway's configuration as the rest of the code sees it: every option present, defaults filled in, every
// path absolute. config/fleetgate.example.yaml documents each option; parse.ts is the only producer.

export type TLSVersion = 'TLSv1.2' | 'TLSv1.3';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  server: ServerConfig;
  controlPlane: ControlPlaneConfig;
  authentication: AuthenticationConfig;
  resources: ResourcesConfig;
  cache: CacheConfig;
  audit: AuditConfig;
  flowControl: FlowControlConfig;
  authorization: AuthorizationConfig;
  admission: AdmissionConfig;
  logging: LoggingConfig;
  metrics: MetricsConfig;
}

export interface ServerConfig {
  address: string;
  /** 0 asks the OS for a free port (tests); the server logs the one it got. */
  port: number;
  tls: ServerTLSConfig;
  maxRequestBodyBytes: number;
  /** Deadline for requests that are not long-running (watch, logs, exec, attach, port-forward are). */
  requestTimeoutSeconds: number;
  shutdownGracePeriodSeconds: number;
  /**
   * SETTINGS_MAX_CONCURRENT_STREAMS offered to HTTP/2 clients. A client-go process multiplexes all its watches over
   * one connection, so this bounds the watches one client can hold per connection.
   */
  http2MaxStreamsPerConnection: number;
}

export interface ServerTLSConfig {
  certFile: string;
  keyFile: string;
  /** Without it the server asks for no client certificate and x509 authentication is off. */
  clientCAFile?: string;
  /**
   * PEM CRLs signed by the client CA (`fleetgate certs revoke` writes one): listed certificates get 401. Reloaded
   * when the file changes; a file that does not exist yet revokes nothing.
   */
  clientCRLFile?: string;
  minVersion: TLSVersion;
}

export interface ControlPlaneConfig {
  kubeconfig: string;
  /** "" means the kubeconfig's current-context. */
  context: string;
  timeoutSeconds: number;
}

export interface AuthenticationConfig {
  anonymous: { enabled: boolean };
  /** enabled is the effective value: true only when server.tls.clientCAFile is set. */
  x509: { enabled: boolean };
  oidc: OIDCIssuerConfig[];
  /** kube-apiserver --token-auth-file format: token,user,uid[,"group1,group2"]. */
  tokenFile?: string;
}

export interface OIDCIssuerConfig {
  /** https URL, exactly as it appears in the tokens' iss claim. */
  issuer: string;
  audiences: string[];
  /** Keys to verify with; without it they come from the issuer's discovery document. */
  jwksFile?: string;
  /** CA bundle for talking to the issuer; the system roots without it. */
  caFile?: string;
  usernameClaim: string;
  /**
   * As written, default "": kube-apiserver's --oidc-username-prefix rules apply when tokens are mapped (src/authn
   * effectiveUsernamePrefix): "" means "<issuer>#" unless usernameClaim is email, "-" means no prefix.
   */
  usernamePrefix: string;
  /** "" means no groups are read from the token. */
  groupsClaim: string;
  groupsPrefix: string;
  /** Each claim must be present in the token with exactly this string value. */
  requiredClaims: Record<string, string>;
}

export interface ResourcesConfig {
  /** The allowlist, always including core pods and events and events.k8s.io events. "*" matches any group or resource. */
  exposed: ExposedResources[];
}

export interface ExposedResources {
  /** "" is the core group. */
  group: string;
  resources: string[];
}

/** Issue 4 adds the cache's options; until then the section must be empty. */
export type CacheMode = 'all' | 'cache' | 'facade';

export interface StaticMemberConfig {
  name: string;
  kubeconfig: string;
  /** "" means the kubeconfig's current-context. */
  context: string;
}

export interface CacheConfig {
  /**
   * all: one process serves everything (default). cache: serve only the member cache (pods, events,
   * /clusters/...), behind facades. facade: forward pod and event reads to the cache service (facade.kubeconfig).
   */
  mode: CacheMode;
  /** Members given in the file: a kubeconfig (and context) each. */
  members: StaticMemberConfig[];
  /** Discover members from Karmada Cluster objects on the control plane, at run time. */
  karmada: { enabled: boolean };
  /** The gateway's own traffic to each member: requests per second and burst. */
  qps: number;
  burst: number;
  /** Events kept per resource for watches that resume and consistent list pages. */
  windowSize: number;
  /** Drop metadata.managedFields from cached objects (they are large and kubectl hides them). */
  dropManagedFields: boolean;
  /**
   * Threads that read the members' list pages and copy out their objects (src/cache/intake.ts), so a cold sync does
   * not hold the main thread (which serves every request); 0 (default): the main thread does it all.
   */
  intakeWorkers: number;
  /**
   * How much the process's JS heap may grow past what its last full collection kept before V8 marks it again, in
   * percent of that, while the heap holds under 256 MiB (src/cache/heapgrowth.ts); 0: V8's own choice, which for a
   * small cache's heap is its minimum, 10%, and a full mark every ~0.5 s under churn.
   */
  heapGrowingPercent: number;
  /**
   * Bytes of the cache's next slabs a helper thread writes once before they are needed, while members' pod lists
   * are under way (src/api/touchahead.ts), so that the event loop does not take a page fault for every 4 KiB it
   * stores; 0: the event loop takes them. Up to this much is resident memory held ahead.
   */
  touchAheadBytes: number;
  /** mode facade: the cache service, reached as the gateway (kubeconfig; its identity must be allowed to impersonate). */
  facade?: { kubeconfig: string; context: string };
}

export interface AuditConfig {
  /** audit.k8s.io/v1 Policy; "" is the policy shipped in config/audit-policy.yaml. */
  policyFile: string;
  /** JSON-lines log; absent: no log file. */
  log?: { path: string; maxSizeBytes: number; maxBackups: number };
  /** Webhook reached through a kubeconfig; absent: no webhook. */
  webhook?: { kubeconfig: string; context: string; mode?: 'batch' | 'blocking'; bufferSize: number; maxBatchSize: number; maxBatchWaitMs: number };
  /** Let mutations through when their audit record cannot be stored. Off: they are refused with 503. */
  failOpen: boolean;
}

export interface FlowControlConfig {
  enabled: boolean;
  /** FlowSchema and PriorityLevelConfiguration YAML files; "" is the set shipped in config/flowcontrol. */
  configDir: string;
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
}

export interface AuthorizationConfig {
  cachedReads: {
    /** controlPlane: one review against the control plane decides every member; perCluster: each member's RBAC. */
    mode: 'controlPlane' | 'perCluster';
    cacheSize: number;
    allowedTTLSeconds: number;
    deniedTTLSeconds: number;
  };
}

export interface ScaleDownResourceConfig {
  group: string;
  resource: string;
  replicasPath: string;
  maxReductionPercent?: number;
  allowScaleToZero?: boolean;
}

export interface AdmissionConfig {
  breakGlassGroups: string[];
  deletionProtection: { enabled: boolean };
  scaleDown: { enabled: boolean; maxReductionPercent: number; allowScaleToZero: boolean; resources: ScaleDownResourceConfig[] };
}

export const CACHE_MODES: readonly CacheMode[] = ['all', 'cache', 'facade'];

export interface LoggingConfig {
  level: LogLevel;
}

/** Served at /metrics on the gateway's port, authorized like kube-apiserver's; no options yet. */
export type MetricsConfig = Record<string, never>;

export const TLS_VERSIONS: readonly TLSVersion[] = ['TLSv1.2', 'TLSv1.3'];
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Served from the member caches whatever the allowlist says, so always exposed. */
export const ALWAYS_EXPOSED: readonly ExposedResources[] = [
  { group: '', resources: ['pods', 'events'] },
  { group: 'events.k8s.io', resources: ['events'] },
];

export const DEFAULTS = {
  address: '0.0.0.0',
  port: 6443,
  tlsMinVersion: 'TLSv1.2' as TLSVersion,
  // kube-apiserver's --max-request-body-bytes default (3 MiB), which is also what etcd accepts for one object.
  maxRequestBodyBytes: 3 * 1024 * 1024,
  requestTimeoutSeconds: 60,
  shutdownGracePeriodSeconds: 30,
  // What kube-apiserver's recommended serving options set (Go's own default, 250, is too few for watch-heavy clients).
  http2MaxStreamsPerConnection: 1000,
  controlPlaneTimeoutSeconds: 30,
  usernameClaim: 'sub',
  groupsClaim: 'groups',
  logLevel: 'info' as LogLevel,
  // Karmada's karmada-search defaults (--cluster-api-qps 40, --cluster-api-burst 60).
  memberQPS: 40,
  memberBurst: 60,
  cacheWindowSize: 100_000,
  // Off: on 2 shared CPUs (the benchmark machine, the simulated members beside the gateway) one worker made a cold
  // sync of 200k pods 15% faster but one of 1M pods 23% slower (269 s -> 330 s).
  intakeWorkers: 0,
  // V8's own choice (10% here) made a 30k-pod gateway under churn mark its heap every ~0.5 s (benchmark scenario 6).
  heapGrowingPercent: 50,
  // Two of the largest slabs (64 MiB): at a million pods a cold sync fills one in well under a second.
  touchAheadBytes: 128 * 1024 * 1024,
} as const;
