// Environment that keeps tools from running configuration an earlier command
// wrote. HOME is emptied before every command (home.mjs); on top of that no
// tool is pointed at a user or system config a command could write, and git
// gets "command scope" settings (GIT_CONFIG_COUNT, which outrank the
// repository's .git/config and its includes) for every key of a fixed name
// that makes it run a program. What this cannot reach (keys whose names a
// repository chooses: filter/diff/merge drivers named by .gitattributes,
// remotes, aliases) is listed in services/sandbox/README.md.
import { RELAY_URL } from './relay-address.mjs';

/** Config keys of fixed name that run programs, with a value that runs nothing a command chose. */
const GIT_SAFE_CONFIG = [
  // Runs on every `git status`/`diff` as a hook; 'false' turns the daemon and hook off.
  ['core.fsmonitor', 'false'],
  // Hooks (post-index-change, reference-transaction, pre-commit...) run from no directory.
  ['core.hooksPath', '/dev/null'],
  // Commands have no terminal, so git starts no pager; still, none a repository names.
  ['core.pager', 'cat'],
  // ':' is git's "do not start an editor": the message or todo list is used as is.
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  // The empty value resets the helper list, dropping the repository's helpers.
  ['credential.helper', ''],
  ['core.askPass', ''],
  ['core.sshCommand', 'ssh'],
  // The programs git would use unconfigured (signing and --show-signature).
  ['gpg.program', 'gpg'],
  ['gpg.openpgp.program', 'gpg'],
  ['gpg.x509.program', 'gpgsm'],
  ['gpg.ssh.program', 'ssh-keygen'],
  // ext:: URLs run a shell command given in the URL.
  ['protocol.ext.allow', 'never'],
];

// Empty, root-owned, on the read-only root (see the Dockerfile).
const EMPTY_CONFIG = '/etc/thinkflow/empty';

// Git's own proxy setting, at command scope like the keys above, so a repository's http.proxy cannot point elsewhere.
const GIT_CONFIG = [...GIT_SAFE_CONFIG, ['http.proxy', RELAY_URL]];

function gitConfigEnv() {
  const env = { GIT_CONFIG_COUNT: String(GIT_CONFIG.length) };
  GIT_CONFIG.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

// A command's own servers inside the container (a test server on localhost)
// are its own loopback, not the worker host's: they bypass the proxy.
const NO_PROXY = 'localhost,127.0.0.1,::1';

/**
 * Every command reaches the network only through the egress relay
 * (egress-relay.mjs), whether or not its session has a network rule: without
 * one the relay answers 503 (no proxy) or the proxy 403 (forbidden), so the
 * command's own output says why. Upper and lower case, as tools differ.
 */
export function proxyEnv() {
  const env = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
    env[name] = RELAY_URL;
    env[name.toLowerCase()] = RELAY_URL;
  }
  return {
    ...env,
    NO_PROXY,
    no_proxy: NO_PROXY,
    npm_config_proxy: RELAY_URL,
    npm_config_https_proxy: RELAY_URL,
    npm_config_noproxy: NO_PROXY,
    PIP_PROXY: RELAY_URL,
  };
}

/** Variables added to every command's environment; `home` is the (fresh) HOME. */
export function toolConfigEnv(home) {
  return {
    XDG_CONFIG_HOME: `${home}/.config`,
    XDG_DATA_HOME: `${home}/.local/share`,
    XDG_STATE_HOME: `${home}/.local/state`,
    XDG_CACHE_HOME: `${home}/.cache`,
    // Python: no user site-packages, so no .pth or usercustomize runs.
    PYTHONNOUSERSITE: '1',
    // npm: no user config (the global one lives on the read-only root).
    NPM_CONFIG_USERCONFIG: EMPTY_CONFIG,
    // git: no global and no system config at all.
    GIT_CONFIG_GLOBAL: EMPTY_CONFIG,
    GIT_CONFIG_NOSYSTEM: '1',
    // These outrank the config keys above (git reads the variable first).
    GIT_EDITOR: ':',
    GIT_SEQUENCE_EDITOR: ':',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_TERMINAL_PROMPT: '0',
    ...gitConfigEnv(),
    ...proxyEnv(),
  };
}
