/**
 * A queue's name: a letter or digit, then up to 127 letters, digits, dots, underscores and hyphens.
 * Every way in checks it (RPC, REST, config, tokens' queue scopes); Postgres checks the same
 * (taskq.is_name).
 */
export const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
