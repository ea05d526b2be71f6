import { defineConfig } from 'vitest/config';

// Three suites, run in this order by `npm test` (test/run-all.mjs):
// unit (pure functions), integration (the in-memory fleet and the gateway in process), e2e (real kube-apiservers).
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 10_000 } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Several files start fleets, gateways and kubectl at once; on 2 cores running them side by side makes
          // timing-sensitive checks (flow control waits, watch latency) fail for want of CPU, not for a bug.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          // Real apiservers are heavy on a 2-core machine: one file at a time.
          fileParallelism: false,
        },
      },
    ],
  },
});
