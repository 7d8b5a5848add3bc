// The rows of bench/workspace/run.ts and how they print (a Markdown table, as bench/RESULTS.md keeps them).

/** One measured figure; `meets` null for a comparison row without a target. */
export type Row = { work: string; via: string; figure: string; target: string; meets: boolean | null };

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function makeTable(rows: Row[]): string {
  const lines = ['| work | via | figure | target | meets |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.work} | ${r.via} | ${r.figure} | ${r.target} | ${r.meets === null ? '' : r.meets ? 'yes' : 'NO'} |`);
  return lines.join('\n');
}

export const gzipWorkspaceNote = [
  'The MB/s target is judged on the plain tar, the like of `docker cp` (which sends a plain tar): the gzip\'d',
  'default is bound by deflate (gzip -1) on the sandbox\'s one CPU, so its MB/s is the compressor\'s, shown for what it is.',
  'RSS is the service process (downloads are made by curl) over each run, sampled every 10 ms; one download before the rows warms the process up.',
  'Service CPU is that process\'s user+system time per download: what the relay costs it, whatever the load of the machine.',
].join('\n');
