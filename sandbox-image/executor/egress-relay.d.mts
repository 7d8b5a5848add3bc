// Types of egress-relay.mjs for the unit test that runs it on the host.
import type { Server } from 'node:net';

export const RELAY_HOST: string;
export const RELAY_PORT: number;
export const RELAY_URL: string;
export const EGRESS_SOCKET: string;
export function startEgressRelay(o: { maxConnections: number; socketPath?: string; host?: string; port?: number }): {
  listening: Promise<Server>;
  dropAll: () => void;
};
