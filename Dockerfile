# The operator image (the walkthrough's OPERATOR_IMAGE), e.g.
#   docker build -t appkind-operator:0.1.0 .
# Runs as UID 65532 with a read-only root filesystem (see lib/src/bundle.ts); nothing is written at runtime.

# Build stage: the construct library (lib/, jsii, CommonJS) and the operator (operator/ plus main.ts,
# ESM) to lib/build/ and build/ with the dev toolchain. npm ci's "prepare" builds lib/.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json main.ts sample.ts ./
COPY lib ./lib
COPY operator ./operator
COPY imports ./imports
RUN npm ci && npx tsc -p tsconfig.build.json

# Dependencies stage: production packages only, without install scripts (none are needed at runtime).
# The workspace package cdk8s-appkind is a symlink node_modules/cdk8s-appkind -> ../lib.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY lib/package.json ./lib/
COPY operator/package.json ./operator/
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

# Runtime stage: compiled JavaScript plus production node_modules; package.json for "type": "module",
# lib/package.json for the CommonJS construct library the operator renders with.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/lib/package.json ./lib/
COPY --from=build /app/lib/build ./lib/build
COPY --from=build /app/build ./build
COPY package.json ./
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "build/operator/main.js"]
