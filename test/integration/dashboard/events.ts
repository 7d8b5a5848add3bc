// Reads a job's whole event stream over REST (as any client would), for
// comparing what the dashboard showed with what the server has.
export type SseEvent = { type: string; id: number; data: any };

export async function readJobEvents(base: string, key: string, jobId: string, opts: { until?: (e: SseEvent) => boolean; idleMs?: number } = {}): Promise<SseEvent[]> {
  const ctl = new AbortController();
  const res = await fetch(`${base}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` }, signal: ctl.signal });
  if (!res.ok || !res.body) throw new Error(`events of ${jobId}: ${res.status}`);
  const out: SseEvent[] = [];
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let idle: NodeJS.Timeout | undefined;
  const arm = () => { clearTimeout(idle); idle = setTimeout(() => ctl.abort(), opts.idleMs ?? 1500); };
  arm();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const field = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim();
        const data = field('data');
        if (!data) continue;
        const e = { type: field('event') ?? 'message', id: Number(field('id')), data: JSON.parse(data) };
        out.push(e);
        arm();
        if (opts.until?.(e)) { ctl.abort(); return out; }
      }
    }
  } catch (err) {
    if (!ctl.signal.aborted) throw err;
  } finally {
    clearTimeout(idle);
  }
  return out;
}
