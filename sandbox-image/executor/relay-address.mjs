// Where a command's proxy settings point (tool-config.mjs) and where the egress
// relay listens (egress-relay.mjs). A module of its own that imports nothing:
// the two modules import each other's neighbours (identity.mjs), and a constant
// read across such a cycle can be read before it is set.
export const RELAY_HOST = '127.0.0.1';
export const RELAY_PORT = 3128;
export const RELAY_URL = `http://${RELAY_HOST}:${RELAY_PORT}`;
