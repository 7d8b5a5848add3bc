// The config's door: the env schema, its parsed form, and the key parsers.
export { ENV_DEFAULTS, loadConfig, parseApiKeys, parseApiKeyNames } from './env.ts';
export type { ApiKeys, Config, Role } from './env.ts';
export { ROLES } from './env.ts';
export { parseRedisUrl, redact, RedisUrlError } from './redis-url.ts';
export type { HostPort, RedisTarget } from './redis-url.ts';
