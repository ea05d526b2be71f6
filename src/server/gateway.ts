// Everything one running gateway holds, built from its configuration: the authenticator, the control plane
// connection, the exposed-resource allowlist, metrics and health checks. The chain's steps read what they need
// from here.

import type { Logger } from 'pino';
import type { Attributes, Decision } from '../api/user.js';
import { newAuthenticator, type Authenticator } from '../authn/index.js';
import { ALWAYS_EXPOSED, type Config } from '../config/index.js';
import { newApiserverMetrics, type ApiserverMetrics } from '../metrics/apiserver.js';
import { upstreamFromKubeconfig, type Upstream } from '../upstream/client.js';
import { exposedResources, type ExposedResources } from '../upstream/discovery.js';
import { requestJSON, subjectAccessReview } from '../upstream/forward.js';
import type { HealthCheck, HealthEndpoints } from './health.js';

export interface Gateway {
  config: Config;
  log: Logger;
  authenticator: Authenticator;
  controlPlane: Upstream;
  exposed: ExposedResources;
  metrics: ApiserverMetrics;
  health: HealthEndpoints;
  /** SubjectAccessReview against the control plane. */
  sar: (attrs: Attributes) => Promise<Decision>;
  /** Set once shutdown has begun: /readyz fails so load balancers stop sending. */
  shuttingDown: boolean;
  close(): Promise<void>;
}

export async function newGateway(config: Config, log: Logger): Promise<Gateway> {
  const authenticator = await newAuthenticator(
    {
      anonymous: config.authentication.anonymous.enabled,
      x509: config.authentication.x509.enabled,
      oidc: config.authentication.oidc,
      tokenFile: config.authentication.tokenFile,
    },
    { log },
  );
  const controlPlane = upstreamFromKubeconfig(config.controlPlane.kubeconfig, config.controlPlane.context || undefined, 'control-plane');
  const exposed = exposedResources([...ALWAYS_EXPOSED, ...config.resources.exposed]);
  const metrics = newApiserverMetrics();
  const g: Gateway = {
    config,
    log,
    authenticator,
    controlPlane,
    exposed,
    metrics,
    health: { livez: [], readyz: [] },
    sar: (attrs) => subjectAccessReview(controlPlane, attrs),
    shuttingDown: false,
    async close() {
      authenticator.close();
      await controlPlane.close();
    },
  };
  const ping: HealthCheck = { name: 'ping', check: async () => {} };
  const log_: HealthCheck = { name: 'log', check: async () => {} };
  g.health.livez.push(ping, log_);
  g.health.readyz.push(ping, log_, controlPlaneReachable(g), {
    name: 'shutdown',
    check: async () => {
      if (g.shuttingDown) throw new Error('the gateway is shutting down');
    },
  });
  return g;
}

/** Ready only while the control plane answers its own /readyz; the answer is reused for a second. */
function controlPlaneReachable(g: Gateway): HealthCheck {
  let last: { at: number; error?: string } | undefined;
  return {
    name: 'control-plane',
    async check() {
      if (!last || Date.now() - last.at > 1000) {
        try {
          const r = await requestJSON(g.controlPlane, 'GET', '/readyz', undefined, undefined, 5000);
          last = { at: Date.now(), error: r.status === 200 ? undefined : `control plane /readyz answered ${r.status}` };
        } catch (e) {
          last = { at: Date.now(), error: (e as Error).message };
        }
      }
      if (last.error) throw new Error(last.error);
    },
  };
}
