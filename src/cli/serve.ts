// `fleetgate serve --config FILE`: runs the gateway until SIGINT or SIGTERM, then shuts down gracefully.

import pino from 'pino';
import type { Config } from '../config/index.js';
import { startGateway } from '../server/server.js';

export async function serve(config: Config): Promise<void> {
  const log = pino({ level: config.logging.level, base: { component: 'fleetgate' }, redact: { paths: ['req.headers.authorization', '*.token', '*.password'], censor: '[redacted]' } });
  const running = await startGateway(config, log);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, 'shutting down');
      running.close().then(resolve, (e) => {
        log.error({ err: String(e) }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
