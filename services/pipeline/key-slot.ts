// The Redis Cluster slot of a key (CRC16/XMODEM of its hash tag, mod 16384),
// as the Cluster computes it: for grouping a multi-key read by slot and for
// the test that every script's keys are one slot. Our own 20 lines rather than
// a transitive dependency of ioredis.

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** The part of the key that is hashed: the first non-empty `{…}`, else the whole key. */
export function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

export function keySlot(key: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashTag(key))) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % 16384;
}
