#!/bin/sh
# taskq over plain HTTP/1.1 + JSON (the Connect protocol), with nothing but curl.
#
#   npm start                      # the gateway, in another terminal
#   sh examples/claim-once.sh      # (or bash) enqueue one job, claim it once, print it
#
# Environment: TASKQ_HTTP_URL (default http://127.0.0.1:7071), TASKQ_QUEUE (default emails),
# TASKQ_TOKEN (a bearer token, when the gateway requires one). For an https:// gateway: TASKQ_CA_FILE
# (the CA that signed its certificate, PEM), and with mutual TLS TASKQ_CERT_FILE and TASKQ_KEY_FILE.
#
# Every RPC is `POST <base>/<package>.<Service>/<Method>` with a JSON body in protobuf JSON form:
# lowerCamelCase field names, bytes as base64, durations as "1.5s", 64-bit integers as strings.
# Errors come back as a non-2xx status with {"code": "...", "message": "..."}.
#
# Settling is not possible from here: Settle (and Heartbeat) are bidirectional streams, which the
# Connect protocol cannot carry over HTTP/1.1 unary JSON. Settle with a streaming client (the SDK, or
# examples/grpc-js-worker.mjs shows the recipe). A job claimed here and never settled is retried when
# its lease expires (attempt 2), until its attempts are spent.
set -eu

base="${TASKQ_HTTP_URL:-http://127.0.0.1:7071}"
queue="${TASKQ_QUEUE:-emails}"

# call <Service/Method> <json body>: prints the JSON response, pretty with jq when it is installed.
# On an RPC error it prints the error to stderr and fails (so `set -e` stops the script).
call() {
  set -- "${base}/taskq.v1.$1" --data "$2"
  if [ -n "${TASKQ_TOKEN:-}" ]; then set -- "$@" -H "authorization: Bearer ${TASKQ_TOKEN}"; fi
  if [ -n "${TASKQ_CA_FILE:-}" ]; then set -- "$@" --cacert "$TASKQ_CA_FILE"; fi
  if [ -n "${TASKQ_CERT_FILE:-}" ]; then set -- "$@" --cert "$TASKQ_CERT_FILE" --key "${TASKQ_KEY_FILE:?TASKQ_KEY_FILE goes with TASKQ_CERT_FILE}"; fi
  if ! res=$(curl --silent --show-error --fail-with-body \
    -H 'content-type: application/json' -H 'connect-protocol-version: 1' "$@"); then
    printf '%s\n' "$res" >&2
    return 1
  fi
  if command -v jq >/dev/null 2>&1; then
    printf '%s\n' "$res" | jq .
  else
    printf '%s\n' "$res"
  fi
}

# The payload is bytes, so JSON carries it as base64.
payload=$(printf '%s' '{"to":"curl@example.com","subject":"Hello from curl"}' | base64 | tr -d '\n')

echo "== Enqueue"
call ProducerService/Enqueue \
  "{\"job\":{\"queue\":\"${queue}\",\"payload\":\"${payload}\",\"contentType\":\"application/json\"}}"

# One poll without a stream. maxWait makes it a long poll: it answers as soon as a job is ready, or
# with {} after 5 s. A throttled queue answers {"throttled":[{"queue","reason","retryAfter"}]}: wait
# retryAfter before asking again.
echo "== ClaimOnce"
call WorkerService/ClaimOnce "{\"queues\":[\"${queue}\"],\"maxJobs\":1,\"maxWait\":\"5s\"}"
# The job's lease is {id, attempt}; its payload is base64 (decode with: base64 -d).
