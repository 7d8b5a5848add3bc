/** Nearest-rank percentile of a sample, in the sample's unit. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export type Row = { name: string; via: string; n: number; p50: number; p99: number; target?: number };

export async function measure(n: number, warmup: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(i);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

export function row(name: string, via: string, times: number[], target?: number): Row {
  return { name, via, n: times.length, p50: percentile(times, 50), p99: percentile(times, 99), target };
}

export function formatTable(rows: Row[]): string {
  const lines = ['| work | via | n | p50 ms | p99 ms | target p50 | meets |', '|---|---|---:|---:|---:|---:|---|'];
  for (const r of rows) {
    const target = r.target === undefined ? '' : `≤ ${r.target}`;
    const meets = r.target === undefined ? '' : r.p50 <= r.target ? 'yes' : 'NO';
    lines.push(`| ${r.name} | ${r.via} | ${r.n} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${target} | ${meets} |`);
  }
  return lines.join('\n');
}
