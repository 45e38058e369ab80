# syntax=docker/dockerfile:1
# The gateway as a container image: built in one stage, run in another that holds only the built
# code and the runtime dependencies, as an unprivileged user, with its data on a volume.
#
#   docker build -t model-gateway .            (or: podman build -t model-gateway .)
#   docker run -p 8080:8080 -v gw-data:/app/data model-gateway
#
# NODE_IMAGE is any image with Node.js 24 and npm (Debian based: the user `node`, uid 1000, must exist).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts stay off: the image brings its own Node (the repository's `node` pin is for machines whose
# system Node is older), better-sqlite3 ships prebuilt binaries, esbuild's binary is a package.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json index.ts server.ts testing.ts ./
COPY core core
COPY plugins plugins
COPY providers providers
COPY money money
COPY admin admin
COPY cli cli
COPY console console
COPY testing testing
COPY scripts scripts
# The image's node, not node_modules/.bin's (not installed with --ignore-scripts).
RUN node node_modules/typescript/bin/tsc -p tsconfig.json && node scripts/build-console.mjs

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist dist
# The embedded ledger (SQLite) and the charge spool live under /app/data (the default `./data/`).
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
# /readyz: 200 while the gateway can take calls (its stores answer), 503 otherwise.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains in-flight calls before exiting; SIGHUP reloads GATEWAY_CONFIG.
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=8", "dist/server.js"]
