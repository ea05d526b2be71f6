# syntax=docker/dockerfile:1
# The fleetgate image: compiled dist/, production dependencies only, running as the non-root user node (1000).
#   docker build -t fleetgate:0.1.0 .
#   docker run --rm -v $PWD/deploy:/etc/fleetgate:ro -p 6443:6443 fleetgate:0.1.0   # reads /etc/fleetgate/config.yaml

# ---- build: all dependencies, then tsc (the prepare script) into dist/ -----------------------------------------
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Dependencies first, without sources, so this layer is reused until the lock file changes. No install scripts:
# tsc needs none (only esbuild, a dev tool of the test runner, has one).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# dist/ also holds the in-memory fleet that `fleetgate demo` runs.
COPY test/sim ./test/sim
RUN npm run build

# ---- production dependencies, in a clean stage so nothing of the dev tree comes along ---------------------------
FROM node:20-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- runtime ----------------------------------------------------------------------------------------------------
FROM node:20-slim
ENV NODE_ENV=production
# No GLIBC_TUNABLES: glibc.malloc.hugetlb=1 (transparent huge pages for malloc) was set here until 2026-11-27. Measured
# again then on the benchmark VM, it made a cold sync no faster and the fan-out of watches slower and less steady
# (every large write buffer of a TLS or HTTP/2 connection came in fresh huge pages); docs/operations.md, "Memory",
# says when to set it.
# V8's young generation at 64 MiB a semi-space (node's default is 16): under churn a large cache then promotes about a
# third as much short-lived fan-out work, and V8 marks its heap less often (docs/operations.md, "Memory"). The chart
# sets NODE_OPTIONS itself (semiSpaceMB, heapSizeMB), which replaces this.
ENV NODE_OPTIONS=--max-semi-space-size=64
WORKDIR /app
# package.json marks the installation root: the default audit policy and flow-control files (config/) are found
# next to it.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY config ./config
# The node user of the base image, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 6443
ENTRYPOINT ["node", "bin/fleetgate.js"]
CMD ["serve", "--config", "/etc/fleetgate/config.yaml"]
