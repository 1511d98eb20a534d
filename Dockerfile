# taskq gateway, production mode: Postgres + Redis from TASKQ_DATABASE_URL / TASKQ_REDIS_URL, tokens from TASKQ_TOKENS.
# Build: docker build -t taskq .   Run: docker run -e TASKQ_DATABASE_URL=... -e TASKQ_REDIS_URL=... -p 7070:7070 -p 7071:7071 taskq

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.build.json ./
COPY sdk-ts/package.json sdk-ts/
COPY gateway/package.json gateway/
COPY bench/package.json bench/
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
COPY bench/package.json bench/
COPY conformance/package.json conformance/
RUN npm ci --omit=dev --no-audit --no-fund --workspace gateway --workspace sdk-ts && npm cache clean --force
COPY --from=build /app/sdk-ts/dist sdk-ts/dist
COPY --from=build /app/gateway/dist gateway/dist
USER node
EXPOSE 7070 7071
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TASKQ_HTTP_PORT||7071)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "gateway/dist/cli.js"]
CMD ["gateway"]
