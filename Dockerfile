# taskq gateway, production mode: Postgres + Redis from TASKQ_DATABASE_URL / TASKQ_REDIS_URL, tokens from TASKQ_TOKENS.
# It binds 0.0.0.0, so it needs TLS (TASKQ_TLS_CERT_FILE, TASKQ_TLS_KEY_FILE) or, behind a TLS-terminating
# load balancer, TASKQ_INSECURE_PLAINTEXT=1 (docs/security.md).
# Build: docker build -t taskq .
# Run:   docker run -e TASKQ_DATABASE_URL=... -e TASKQ_REDIS_URL=... -e TASKQ_TOKENS=... \
#          -v /etc/taskq/tls:/tls:ro -e TASKQ_TLS_CERT_FILE=/tls/tls.crt -e TASKQ_TLS_KEY_FILE=/tls/tls.key \
#          -p 7070:7070 -p 7071:7071 taskq

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.build.json ./
COPY sdk-ts/package.json sdk-ts/
COPY gateway/package.json gateway/
COPY conformance/package.json conformance/
RUN npm ci --no-audit --no-fund
COPY sdk-ts sdk-ts
COPY gateway gateway
# npm run build compiles every workspace the build references, the conformance kit included, which
# takes a copy of the contract (proto/).
COPY conformance conformance
COPY proto proto
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk-ts/package.json sdk-ts/
COPY gateway/package.json gateway/
COPY conformance/package.json conformance/
RUN npm ci --omit=dev --no-audit --no-fund --workspace gateway --workspace sdk-ts && npm cache clean --force
COPY --from=build /app/sdk-ts/dist sdk-ts/dist
COPY --from=build /app/gateway/dist gateway/dist
USER node
EXPOSE 7070 7071
# HTTPS or plain HTTP, whichever the gateway serves (see gateway/src/healthcheck.ts).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "gateway/dist/healthcheck.js", "/readyz"]
ENTRYPOINT ["node", "gateway/dist/cli.js"]
CMD ["gateway"]
