# The operator image (the walkthrough's OPERATOR_IMAGE), e.g.
#   docker build -t appkind-operator:0.1.0 .
# Runs as UID 65532 with a read-only root filesystem (see lib/bundle.ts); nothing is written at runtime.

# Build stage: compile lib/, operator/ and main.ts to build/ with the dev toolchain.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json main.ts ./
COPY lib ./lib
COPY operator ./operator
RUN npm run build

# Dependencies stage: production packages only, without install scripts (none are needed at runtime).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

# Runtime stage: compiled JavaScript plus production node_modules; package.json for "type": "module".
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/build ./build
COPY package.json ./
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "build/operator/main.js"]
